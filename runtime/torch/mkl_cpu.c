/* MKL's kernels chosen by what the CPU can do, not by who made it.

   torch's CPU matmuls (aten::mm, addmm, bmm in float32) are MKL's sgemm, which
   PyTorch's wheels link statically into libtorch_cpu.so. MKL picks its kernels
   after asking mkl_serv_intel_cpu_true() whether the CPU is Intel's; on any
   other CPU the answer is no and it takes slower code, whatever instructions the
   CPU has. This library answers yes. MKL then chooses among its kernels by the
   CPU's feature flags (CPUID), as it does on Intel's CPUs, where the answer is
   the one MKL computes itself. (Measured only on the CPU below, which has
   AVX-512; not on one without it.)

   Measured on the 2-core AMD EPYC (Zen 4, AVX-512) of retc's CI: a 12-block
   Conformer's torch training step at 2 x 200 frames 566 -> 442 ms (its matmuls
   386 -> 249 ms, 115 -> 179 GFLOP/s); a 4096 x 4096 torch.mm 180 -> 210 GFLOP/s,
   TensorFlow's (oneDNN) 214. RETURNN's ConformerEncoder on torch gains alike.

   The venv hook (runtime/retc_venv_hook.py) loads it with RTLD_GLOBAL before
   torch's libraries load, so that their reference binds here (global scope
   first); tools/setup.sh builds it into the venv. RETC_MKL_VENDOR_CHECK=1 in the
   environment leaves MKL's own check in place. */

static long checks;

int mkl_serv_intel_cpu_true(void) {
  __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
  return 1;
}

/* How often MKL asked (tests/integration/test_runtime.py: the answer is this one's). */
long retc_mkl_cpu_checks(void) { return __atomic_load_n(&checks, __ATOMIC_RELAXED); }
