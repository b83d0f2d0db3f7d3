// Two TensorFlow CPU ops for weight norm's passes over a weight: each reads the
// weight-sized tensors once, where TF's own ops took more passes or a slow path.
//
//   RetcAxisDot(a, b, axis)           sum over `axis` of a * b, for 2-d a and b
//   RetcAxisScaleAdd(a, s, b, c, axis) a * s + b * c, s and c along the other axis
//
// A weight-normed linear (the TF configs' _retc_scaled_linear with norm_here)
// has its weight v [in, out] (axis 0, the in axis) or [out, in] (axis 1),
// w = g * v / |v| with the norm over the in axis. |v|^2 is RetcAxisDot(v, v): TF's EuclideanNorm
// over axis 0 of a row-major [512, 2048] weight is a strided reduction that ran at 13 GB/s here,
// half the rate of the same reduction over axis 1; this one runs rows of contiguous memory into
// per-thread sums. v's gradient is the product's share plus v times a vector (the norm's share),
// RetcAxisScaleAdd in one pass over them, where TF's Mul and AddN (the two shares summed) made
// three.
//
// Measured on the 2-core AMD EPYC of retc's CI, 36 weights of 512 x 2048 (144 MB):
// the norms 11.3 ms by EuclideanNorm, 7.3 ms by RetcAxisDot; the gradient's sum
// 17.5 ms by Mul and AddN, 8.0 ms by RetcAxisScaleAdd. A 12-block Conformer's TF
// step with weight norm at 2 x 200 frames: 482.4 -> 450.5 ms (plain 409.1).
//
// CPU kernels only: the configs use TF's own ops on a GPU. tools/setup.sh builds
// this file into retc's venv against the TensorFlow installed there.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/threadpool.h"

namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using Sharding = tensorflow::thread::ThreadPool::SchedulingParams;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

// The loops below vectorize for the widest instructions the CPU has (one clone
// each, chosen when the library loads).
#if defined(__x86_64__) && defined(__GNUC__)
#define RETC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RETC_CLONES
#endif

// acc[j] += sum over rows [begin, end) of a[i][j] * b[i][j], 4 rows at a time.
template <typename T>
RETC_CLONES void dot_rows_into(const T* __restrict a, const T* __restrict b, T* __restrict acc,
                               int64_t begin, int64_t end, int64_t cols) {
  int64_t i = begin;
  for (; i + 4 <= end; i += 4) {
    const T* x = a + i * cols;
    const T* y = b + i * cols;
    for (int64_t j = 0; j < cols; ++j) {
      acc[j] += x[j] * y[j] + x[j + cols] * y[j + cols] + x[j + 2 * cols] * y[j + 2 * cols] +
                x[j + 3 * cols] * y[j + 3 * cols];
    }
  }
  for (; i < end; ++i) {
    for (int64_t j = 0; j < cols; ++j) acc[j] += a[i * cols + j] * b[i * cols + j];
  }
}

template <typename T>
RETC_CLONES T dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// o[j] = a[j] * s[j] + b[j] * c[j] (s_step, c_step 1), or with s[0], c[0] for all j (0).
template <typename T>
RETC_CLONES void scale_add(const T* __restrict a, const T* __restrict s, const T* __restrict b,
                           const T* __restrict c, T* o, int64_t n, int64_t step) {
  if (step == 1) {
    for (int64_t j = 0; j < n; ++j) o[j] = a[j] * s[j] + b[j] * c[j];
  } else {
    const T sv = s[0], cv = c[0];
    for (int64_t j = 0; j < n; ++j) o[j] = a[j] * sv + b[j] * cv;
  }
}

// Rows per task at least this many (a task's cost is rows x cols multiply-adds).
constexpr int64_t kMinRows = 16;

// An op of an `axis` attr, 0 or 1.
class AxisOp : public OpKernel {
 public:
  explicit AxisOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("axis", &axis_));
    OP_REQUIRES(ctx, axis_ == 0 || axis_ == 1,
                absl::InvalidArgumentError(
                    absl::StrCat(type_string(), ": axis must be 0 or 1, not ", axis_)));
  }

 protected:
  int axis_ = 0;
};

template <typename T>
class AxisDotOp : public AxisOp {
 public:
  using AxisOp::AxisOp;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.dims() == 2 && a.shape() == b.shape(),
                absl::InvalidArgumentError(
                    absl::StrCat("RetcAxisDot: a and b must be 2-d and of one shape, not ",
                                 a.shape().DebugString(), " and ", b.shape().DebugString())));
    const int64_t rows = a.dim_size(0), cols = a.dim_size(1);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({axis_ == 0 ? cols : rows}), &out));
    const T* pa = a.flat<T>().data();
    const T* pb = b.flat<T>().data();
    T* po = out->flat<T>().data();
    auto* pool = ctx->device()->tensorflow_cpu_worker_threads()->workers;
    if (axis_ == 1) {  // one dot per row
      pool->ParallelFor(rows, Sharding::Adaptive(2 * cols), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = dot(pa + i * cols, pb + i * cols, cols);
      });
      return;
    }
    // Over axis 0: each task sums its block of rows into a vector of its own.
    const int64_t blocks =
        std::max<int64_t>(1, std::min<int64_t>(pool->NumThreads(), rows / kMinRows));
    std::vector<T> partial(blocks * cols, T(0));
    pool->ParallelFor(blocks, Sharding::Adaptive(2 * rows * cols / blocks),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t k = begin; k < end; ++k) {
                          dot_rows_into(pa, pb, partial.data() + k * cols, rows * k / blocks,
                                        rows * (k + 1) / blocks, cols);
                        }
                      });
    std::copy(partial.begin(), partial.begin() + cols, po);
    for (int64_t k = 1; k < blocks; ++k) {
      for (int64_t j = 0; j < cols; ++j) po[j] += partial[k * cols + j];
    }
  }
};

template <typename T>
class AxisScaleAddOp : public AxisOp {
 public:
  using AxisOp::AxisOp;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& s = ctx->input(1);
    const Tensor& b = ctx->input(2);
    const Tensor& c = ctx->input(3);
    const int64_t n = a.dims() == 2 ? a.dim_size(1 - axis_) : -1;  // the vectors' length
    OP_REQUIRES(ctx,
                a.dims() == 2 && a.shape() == b.shape() && s.dims() == 1 && c.dims() == 1 &&
                    s.dim_size(0) == n && c.dim_size(0) == n,
                absl::InvalidArgumentError(absl::StrCat(
                    "RetcAxisScaleAdd: a and b 2-d and of one shape, s and c of its dim ",
                    1 - axis_, "; not ", a.shape().DebugString(), ", ", s.shape().DebugString(),
                    ", ", b.shape().DebugString(), ", ", c.shape().DebugString())));
    const int64_t rows = a.dim_size(0), cols = a.dim_size(1);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, a.shape(), &out));
    const T* pa = a.flat<T>().data();
    const T* pb = b.flat<T>().data();
    const T* ps = s.flat<T>().data();
    const T* pc = c.flat<T>().data();
    T* po = out->flat<T>().data();
    auto* pool = ctx->device()->tensorflow_cpu_worker_threads()->workers;
    const int axis = axis_;
    pool->ParallelFor(rows, Sharding::Adaptive(3 * cols), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t k = axis == 0 ? 0 : i;  // axis 1: row i's scalars
        scale_add(pa + i * cols, ps + k, pb + i * cols, pc + k, po + i * cols, cols,
                  axis == 0 ? 1 : 0);
      }
    });
  }
};

REGISTER_OP("RetcAxisDot")
    .Input("a: T")
    .Input("b: T")
    .Output("out: T")
    .Attr("axis: int")
    .Attr("T: {float, double}")
    .SetShapeFn([](InferenceContext* c) {
      ShapeHandle a;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 2, &a));
      TF_RETURN_IF_ERROR(c->Merge(a, c->input(1), &a));
      int axis;
      TF_RETURN_IF_ERROR(c->GetAttr("axis", &axis));
      if (axis != 0 && axis != 1)
        return absl::InvalidArgumentError("RetcAxisDot: axis must be 0 or 1");
      c->set_output(0, c->Vector(c->Dim(a, 1 - axis)));
      return absl::OkStatus();
    });

REGISTER_OP("RetcAxisScaleAdd")
    .Input("a: T")
    .Input("s: T")
    .Input("b: T")
    .Input("c: T")
    .Output("out: T")
    .Attr("axis: int")
    .Attr("T: {float, double}")
    .SetShapeFn([](InferenceContext* c) {
      ShapeHandle a;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 2, &a));
      TF_RETURN_IF_ERROR(c->Merge(a, c->input(2), &a));
      c->set_output(0, a);
      return absl::OkStatus();
    });

#define RETC_REGISTER(T)                                                                        \
  REGISTER_KERNEL_BUILDER(                                                                      \
      Name("RetcAxisDot").Device(tensorflow::DEVICE_CPU).TypeConstraint<T>("T"), AxisDotOp<T>); \
  REGISTER_KERNEL_BUILDER(                                                                      \
      Name("RetcAxisScaleAdd").Device(tensorflow::DEVICE_CPU).TypeConstraint<T>("T"),           \
      AxisScaleAddOp<T>);
RETC_REGISTER(float)
RETC_REGISTER(double)
#undef RETC_REGISTER

}  // namespace
