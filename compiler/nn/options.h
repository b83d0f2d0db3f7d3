// RETC_ARG: an option of a module's options struct, with a chainable setter
// and a getter, as the PyTorch C++ frontend's TORCH_ARG:
//
//   struct LinearLikeOptions {
//     LinearLikeOptions(ir::Dim in, ir::Dim out) : in_(in), out_(out) {}
//     RETC_ARG(ir::Dim, in);
//     RETC_ARG(ir::Dim, out);
//     RETC_ARG(bool, bias) = true;
//   };
//   LinearLikeOptions(a, b).bias(false)
#pragma once

/// A comma inside a RETC_ARG type: `RETC_ARG(std::array<int64_t RETC_COMMA 2>, k)`.
#define RETC_COMMA ,

#define RETC_ARG(T, name)                                  \
 public:                                                   \
  auto name(const T& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                            \
    return *this;                                          \
  }                                                        \
  const T& name() const noexcept { return this->name##_; } \
                                                           \
 private:                                                  \
  T name##_
