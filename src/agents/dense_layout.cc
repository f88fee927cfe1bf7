// DenseLayout::Of: where a described model's layers lie in its flat
// parameters (agents/dense_path.h), checked against the description.
#include <stdexcept>
#include <string>
#include <vector>

#include "asyncrl/agents/dense_path.h"

namespace asyncrl {
namespace {

// Offset of `t` in `flat`, checking that it is a contiguous float32 view
// into it of `numel` elements.
int64_t OffsetIn(const torch::Tensor& t, FlatParameters& flat,
                 const std::string& what, int64_t numel) {
  if (!t.defined() || t.scalar_type() != torch::kFloat32 ||
      !t.is_contiguous() || t.numel() != numel) {
    throw std::logic_error("DenseLayout: " + what +
                           " is not a contiguous float32 tensor of " +
                           std::to_string(numel) + " elements");
  }
  const float* base = flat.params_data();
  const float* p = t.data_ptr<float>();
  if (p < base || p + numel > base + flat.size()) {
    throw std::logic_error("DenseLayout: " + what +
                           " is not in the flat parameter buffer");
  }
  return p - base;
}

std::vector<DenseLayout::Layer> Layers(
    const std::vector<DenseDescription::Layer>& described, FlatParameters& flat,
    const std::string& name, int64_t* covered) {
  if (described.empty()) {
    throw std::logic_error("DenseLayout: the " + name + " MLP has no layers");
  }
  std::vector<DenseLayout::Layer> layers;
  for (size_t l = 0; l < described.size(); ++l) {
    const auto& w = described[l].weight;
    const std::string what = name + " layer " + std::to_string(l);
    if (!w.defined() || w.dim() != 2) {
      throw std::logic_error("DenseLayout: " + what + " weight is not 2-D");
    }
    DenseLayout::Layer layer;
    layer.out = w.size(0);
    layer.in = w.size(1);
    layer.weight = OffsetIn(w, flat, what + " weight", layer.out * layer.in);
    layer.bias = OffsetIn(described[l].bias, flat, what + " bias", layer.out);
    if (!layers.empty() && layers.back().out != layer.in) {
      throw std::logic_error("DenseLayout: " + what + " takes " +
                             std::to_string(layer.in) + " inputs after " +
                             std::to_string(layers.back().out) + " outputs");
    }
    *covered += layer.out * layer.in + layer.out;
    layers.push_back(layer);
  }
  return layers;
}

std::vector<double> ToDoubles(const torch::Tensor& t, int64_t n,
                              const std::string& what) {
  if (!t.defined() || t.numel() != n) {
    throw std::logic_error("DenseLayout: " + what + " does not have " +
                           std::to_string(n) + " elements");
  }
  const torch::Tensor d = t.to(torch::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + n};
}

// The convolutions of a trunk over a `image` ([C, H, W]) input, chained.
std::vector<DenseLayout::Conv> Convs(
    const std::vector<DenseDescription::Conv>& described,
    const std::vector<int64_t>& image, FlatParameters& flat, int64_t* covered) {
  if (image.size() != 3 || image[0] <= 0 || image[1] <= 0 || image[2] <= 0) {
    throw std::logic_error("DenseLayout: the trunk's image is not [C, H, W]");
  }
  if (described.empty()) {
    throw std::logic_error("DenseLayout: the trunk has no convolution");
  }
  std::vector<DenseLayout::Conv> convs;
  int64_t c = image[0], h = image[1], w = image[2];
  for (size_t l = 0; l < described.size(); ++l) {
    const auto& d = described[l];
    const std::string what = "conv " + std::to_string(l);
    if (!d.weight.defined() || d.weight.dim() != 4 || d.weight.size(1) != c ||
        d.weight.size(2) != d.weight.size(3) || d.stride < 1 || d.padding < 0) {
      throw std::logic_error("DenseLayout: " + what + " weight is not [out, " +
                             std::to_string(c) +
                             ", k, k], or its stride or padding is invalid");
    }
    DenseLayout::Conv conv;
    conv.in_channels = c;
    conv.out_channels = d.weight.size(0);
    conv.kernel = d.weight.size(2);
    conv.stride = d.stride;
    conv.padding = d.padding;
    conv.in_h = h;
    conv.in_w = w;
    if (h + 2 * conv.padding < conv.kernel ||
        w + 2 * conv.padding < conv.kernel) {
      throw std::logic_error("DenseLayout: " + what + "'s kernel is larger " +
                             "than its padded input");
    }
    conv.out_h = (h + 2 * conv.padding - conv.kernel) / conv.stride + 1;
    conv.out_w = (w + 2 * conv.padding - conv.kernel) / conv.stride + 1;
    const int64_t weights = conv.out_channels * conv.patch();
    conv.weight = OffsetIn(d.weight, flat, what + " weight", weights);
    conv.bias = OffsetIn(d.bias, flat, what + " bias", conv.out_channels);
    *covered += weights + conv.out_channels;
    convs.push_back(conv);
    c = conv.out_channels;
    h = conv.out_h;
    w = conv.out_w;
  }
  return convs;
}

// The LSTM cells of `description` into `layout`, after a trunk of
// `features` outputs (0: none; the cells then read the observation, or
// their encoders do); returns the cells' hidden size, what pi and v read.
int64_t Cells(const DenseDescription& description, FlatParameters& flat,
              int64_t features, DenseLayout* layout, int64_t* covered) {
  const size_t count = description.lstm.size();
  if (count > 2) {
    throw std::logic_error("DenseLayout: 1 or 2 LSTM cells, got " +
                           std::to_string(count));
  }
  int64_t hidden = 0;
  for (size_t i = 0; i < count; ++i) {
    const DenseDescription::Lstm& d = description.lstm[i];
    const std::string what = "lstm " + std::to_string(i);
    DenseLayout::Lstm cell;
    if (!d.weight_ih.defined() || d.weight_ih.dim() != 2 ||
        d.weight_ih.size(0) % 4 != 0 || d.weight_ih.size(0) == 0) {
      throw std::logic_error("DenseLayout: " + what +
                             " weight_ih is not [4 H, in]");
    }
    cell.hidden = d.weight_ih.size(0) / 4;
    cell.in = d.weight_ih.size(1);
    const int64_t gates = 4 * cell.hidden;
    cell.weight_ih =
        OffsetIn(d.weight_ih, flat, what + " weight_ih", gates * cell.in);
    cell.weight_hh =
        OffsetIn(d.weight_hh, flat, what + " weight_hh", gates * cell.hidden);
    cell.bias_ih = OffsetIn(d.bias_ih, flat, what + " bias_ih", gates);
    cell.bias_hh = OffsetIn(d.bias_hh, flat, what + " bias_hh", gates);
    *covered += gates * (cell.in + cell.hidden + 2);
    if (hidden != 0 && cell.hidden != hidden) {
      throw std::logic_error("DenseLayout: the LSTM cells' sizes differ");
    }
    hidden = cell.hidden;
    // What the cell reads: its encoder's output, the trunk's, or the
    // observation.
    int64_t input = features;
    if (!d.encoder.empty()) {
      if (count != 2 || features != 0) {
        throw std::logic_error(
            "DenseLayout: LSTM encoders need two branches and no trunk");
      }
      cell.encoder = Layers(d.encoder, flat, what + " encoder", covered);
      input = cell.encoder.back().out;
      const int64_t obs = cell.encoder.front().in;
      if (layout->row_size != 0 && layout->row_size != obs) {
        throw std::logic_error("DenseLayout: the LSTM encoders read " +
                               std::to_string(layout->row_size) + " and " +
                               std::to_string(obs) + " floats");
      }
      layout->row_size = obs;
    } else if (count == 2) {
      throw std::logic_error("DenseLayout: two LSTM branches without encoders");
    } else if (input == 0) {
      input = cell.in;
      layout->row_size = cell.in;
    }
    if (cell.in != input) {
      throw std::logic_error("DenseLayout: " + what + " takes " +
                             std::to_string(cell.in) + " inputs after " +
                             std::to_string(input) + " outputs");
    }
    layout->lstm.push_back(cell);
  }
  return hidden;
}

}  // namespace

DenseLayout DenseLayout::Of(const DenseDescription& description,
                            FlatParameters& flat) {
  DenseLayout layout;
  layout.kind = description.kind;
  layout.tanh = description.tanh;
  int64_t covered = 0;
  int64_t features = 0;  // What pi and v read.
  if (!description.image.empty()) {
    layout.input_scale = description.input_scale;
    layout.convs = Convs(description.convs, description.image, flat, &covered);
    layout.trunk = Layers(description.trunk, flat, "trunk", &covered);
    if (layout.trunk.front().in != layout.convs.back().out_size()) {
      throw std::logic_error(
          "DenseLayout: the trunk's first dense layer takes " +
          std::to_string(layout.trunk.front().in) + " inputs after " +
          std::to_string(layout.convs.back().out_size()) + " outputs");
    }
    features = layout.trunk.back().out;
    layout.row_size = layout.convs.front().in_size();
  } else if (!description.convs.empty() || !description.trunk.empty()) {
    throw std::logic_error("DenseLayout: a trunk without an image");
  }
  if (!description.lstm.empty()) {
    features = Cells(description, flat, features, &layout, &covered);
  }
  layout.pi = Layers(description.pi, flat, "pi", &covered);
  layout.v = Layers(description.v, flat, "v", &covered);
  if (features == 0) {
    features = layout.pi.front().in;
    layout.row_size = features;
  }
  if (layout.pi.front().in != features || layout.v.front().in != features ||
      layout.v.back().out != 1) {
    throw std::logic_error(
        "DenseLayout: the pi and v MLPs must read the same input and v must "
        "end in one output");
  }
  if (layout.kind == PolicyKind::kGaussian) {
    const int64_t d = layout.policy_size();
    layout.log_std = OffsetIn(description.log_std, flat, "log_std", d);
    covered += d;
    layout.center = ToDoubles(description.center, d, "center");
    layout.half_range = ToDoubles(description.half_range, d, "half_range");
  }
  if (covered != flat.size()) {
    throw std::logic_error("DenseLayout: the description covers " +
                           std::to_string(covered) + " of the model's " +
                           std::to_string(flat.size()) + " parameters");
  }
  return layout;
}

}  // namespace asyncrl
