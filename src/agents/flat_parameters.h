// Re-homes every parameter of a module (and its gradient) into one
// contiguous float buffer, so copying all parameters, clipping all gradients
// or an optimizer step is a single pass over one array.
#ifndef ASYNCRL_AGENTS_FLAT_PARAMETERS_H_
#define ASYNCRL_AGENTS_FLAT_PARAMETERS_H_

#include <torch/torch.h>

#include <string>
#include <vector>

namespace asyncrl {

// Where one named parameter lives in the flat buffer.
struct ParameterSlice {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t numel = 0;
};

// After construction the module's parameters are views into params() and
// their gradients views into grads(); backward accumulates into grads() in
// place. Keeps the module alive. Not thread-safe.
class FlatParameters {
 public:
  explicit FlatParameters(torch::nn::Module& module);

  torch::Tensor& params() { return params_; }
  torch::Tensor& grads() { return grads_; }
  float* params_data() { return params_.data_ptr<float>(); }
  float* grads_data() { return grads_.data_ptr<float>(); }
  int64_t size() const { return size_; }
  const std::vector<ParameterSlice>& slices() const { return slices_; }

  void ZeroGrads() { grads_.zero_(); }

 private:
  torch::Tensor params_;
  torch::Tensor grads_;
  int64_t size_ = 0;
  std::vector<ParameterSlice> slices_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_AGENTS_FLAT_PARAMETERS_H_
