#include "asyncrl/agents/flat_parameters.h"

#include <stdexcept>

namespace asyncrl {

FlatParameters::FlatParameters(torch::nn::Module& module) {
  auto named = module.named_parameters(/*recurse=*/true);
  for (const auto& item : named) {
    const torch::Tensor& p = item.value();
    if (p.scalar_type() != torch::kFloat32) {
      throw std::invalid_argument("parameter '" + item.key() +
                                  "' is not float32; FlatParameters needs "
                                  "float32 parameters");
    }
    slices_.push_back({item.key(), p.sizes().vec(), size_, p.numel()});
    size_ += p.numel();
  }
  params_ = torch::empty({size_});
  grads_ = torch::zeros({size_});
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (auto& item : named) {
    torch::Tensor& p = item.value();
    const ParameterSlice& s = slices_[i++];
    auto view = params_.narrow(0, s.offset, s.numel).view(p.sizes());
    view.copy_(p);
    p.set_data(view);
    p.mutable_grad() = grads_.narrow(0, s.offset, s.numel).view(p.sizes());
  }
}

}  // namespace asyncrl
