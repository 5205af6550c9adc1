"""C++/CUDA sources the benchmarks build. Plain strings and string generators, nothing else.

The wrappers use only API that this project and apache-tvm-ffi 0.1.15 share (TensorView,
TVM_FFI_DLL_EXPORT_TYPED_FUNC, TVMFFIEnvGetStream, the runtime-API spelling of
``CubinKernel::Launch``), so the same text is built by both and the comparison is like for like.
"""

from __future__ import annotations

# A function that does nothing with 3 tensors: the cost of the binding alone (call_overhead).
NOOP_CPP = """\
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void noop(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}
void noop0() {}
"""
NOOP_FUNCTIONS = ["noop", "noop0"]

# The one-function cuda_sources module of the cold/warm load_inline targets.
ADD_ONE_CUDA = """\
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

__global__ void AddOneKernel(float* x, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

void add_one(tvm::ffi::TensorView x) {
  int64_t n = x.size(0);
  DLDevice dev = x.device();
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  AddOneKernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      static_cast<float*>(x.data_ptr()), n);
}
"""
ADD_ONE_FUNCTIONS = ["add_one"]

# The kernels every launcher launches: 3 pointers and an int, and 15 pointers and an int.
N_WIDE = 16
EMPTY_KERNELS_CU = (
    'extern "C" __global__ void empty(float* a, float* b, float* c, int n) {}\n'
    'extern "C" __global__ void empty16('
    + ", ".join(f"float* a{i}" for i in range(N_WIDE - 1))
    + ", int n) {}\n"
)

_LAUNCH_HEADERS = """\
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/cubin_launcher.h>
#include <tvm/ffi/function.h>

TVM_FFI_EMBED_CUBIN(bench_empty);

namespace {
using tvm::ffi::TensorView;

cudaStream_t StreamOf(const TensorView& t) {
  DLDevice dev = t.device();
  return static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
}
}  // namespace
"""


def _wide_params() -> str:
    return ", ".join(f"TensorView a{i}" for i in range(N_WIDE - 1))


def _wide_ptrs() -> str:
    return "\n".join(f"  void* p{i} = a{i}.data_ptr();" for i in range(N_WIDE - 1))


def launch_wrapper_source() -> str:
    """launch3 / launch16 / nolaunch, built identically by this project and the reference."""
    wide_args = ", ".join(f"&p{i}" for i in range(N_WIDE - 1))
    return (
        _LAUNCH_HEADERS
        + f"""
void Launch3(TensorView a, TensorView b, TensorView c, int64_t n) {{
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(bench_empty, "empty");
  void* pa = a.data_ptr();
  void* pb = b.data_ptr();
  void* pc = c.data_ptr();
  int n32 = static_cast<int>(n);
  void* args[] = {{&pa, &pb, &pc, &n32}};
  cudaError_t err = kernel.Launch(args, tvm::ffi::dim3(1), tvm::ffi::dim3(1), StreamOf(a));
  TVM_FFI_CHECK_CUDA_ERROR(err);
}}

void Launch16({_wide_params()}, int64_t n) {{
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(bench_empty, "empty16");
{_wide_ptrs()}
  int n32 = static_cast<int>(n);
  void* args[] = {{{wide_args}, &n32}};
  cudaError_t err = kernel.Launch(args, tvm::ffi::dim3(1), tvm::ffi::dim3(1), StreamOf(a0));
  TVM_FFI_CHECK_CUDA_ERROR(err);
}}

// Same arguments as Launch3, no launch: what the binding alone costs.
void NoLaunch(TensorView a, TensorView b, TensorView c, int64_t n) {{}}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch3, Launch3);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch16, Launch16);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nolaunch, NoLaunch);
"""
    )


def launch_attrs_wrapper_source() -> str:
    """Cluster 2x1x1 + PDL through this project's LaunchConfig builder (not in the reference).

    Kept in its own module so that an API mismatch only turns this row into n/a.
    """
    return (
        _LAUNCH_HEADERS
        + """
void Launch3Attrs(TensorView a, TensorView b, TensorView c, int64_t n) {
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL(bench_empty, "empty");
  void* pa = a.data_ptr();
  void* pb = b.data_ptr();
  void* pc = c.data_ptr();
  int n32 = static_cast<int>(n);
  void* args[] = {&pa, &pb, &pc, &n32};
  tvm::ffi::LaunchConfig cfg(tvm::ffi::dim3(2), tvm::ffi::dim3(1), StreamOf(a));
  cfg.SetCluster(tvm::ffi::dim3(2, 1, 1));
  cfg.SetProgrammaticStreamSerialization(true);
  cudaError_t err = kernel.Launch(args, cfg);
  TVM_FFI_CHECK_CUDA_ERROR(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch3_attrs, Launch3Attrs);
"""
    )


# ----------------------------------------------------------------------------- many kernels


def numbered_kernel(i: int) -> str:
    """A distinct small kernel k<i>(float* x, int n) so that each CUBIN really differs."""
    return (
        f'extern "C" __global__ void k{i}(float* x, int n) {{\n'
        f"  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  if (t < n) x[t] = x[t] * {i + 2}.0f + {i}.0f;\n}}\n"
    )


def many_kernels_cu(count: int) -> str:
    return "".join(numbered_kernel(i) for i in range(count))


def many_launchers_source(count: int, *, one_cubin: bool) -> str:
    """launch_k<i>(x) for i < count; kernel k<i> lives in CUBIN c<i>, or all in CUBIN ``all``."""
    lines = [
        "#include <tvm/ffi/container/tensor.h>",
        "#include <tvm/ffi/error.h>",
        "#include <tvm/ffi/extra/c_env_api.h>",
        "#include <tvm/ffi/extra/cuda/cubin_launcher.h>",
        "#include <tvm/ffi/function.h>",
        "",
    ]
    embeds = ["all"] if one_cubin else [f"c{i}" for i in range(count)]
    lines += [f"TVM_FFI_EMBED_CUBIN({name});" for name in embeds]
    for i in range(count):
        embed = "all" if one_cubin else f"c{i}"
        lines.append(f"""
void LaunchK{i}(tvm::ffi::TensorView x) {{
  static auto kernel = TVM_FFI_EMBED_CUBIN_GET_KERNEL({embed}, "k{i}");
  void* px = x.data_ptr();
  int n = static_cast<int>(x.size(0));
  void* args[] = {{&px, &n}};
  DLDevice dev = x.device();
  cudaStream_t stream =
      static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  cudaError_t err = kernel.Launch(args, tvm::ffi::dim3((n + 127) / 128), tvm::ffi::dim3(128),
                                  stream);
  TVM_FFI_CHECK_CUDA_ERROR(err);
}}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch_k{i}, LaunchK{i});""")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the C++ floor


def floor_program_source() -> str:
    """A C++ program that times launch loops of the empty kernels without any binding.

    Usage: floor <cubin> <iters> <samples> <warmup>. Prints one line per path:
    ``<name> <us per launch of sample 1> <sample 2> ...``, or ``<name> n/a <reason>``.
    Driver entry points come through cudaGetDriverEntryPointByVersion, so it links only cudart.
    """
    wide_params = ", ".join(f"float* a{i}" for i in range(N_WIDE - 1))
    return (
        r"""
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

extern "C" __global__ void empty(float* a, float* b, float* c, int n) {}
extern "C" __global__ void empty16("""
        + wide_params
        + r""", int n) {}

namespace {

int g_iters = 2000, g_samples = 10, g_warmup = 200;

bool Rt(cudaError_t err, const char* what, std::string* reason) {
  if (err == cudaSuccess) return true;
  *reason = std::string(what) + ": " + cudaGetErrorName(err);
  return false;
}

bool Drv(CUresult err, const char* what, std::string* reason) {
  if (err == CUDA_SUCCESS) return true;
  *reason = std::string(what) + ": CUresult " + std::to_string(static_cast<int>(err));
  return false;
}

// Times g_samples loops of g_iters launches; launch() returns false (with reason) on error.
void Run(const char* name, const std::function<bool(std::string*)>& launch) {
  std::string reason;
  for (int i = 0; i < g_warmup; ++i) {
    if (!launch(&reason)) { std::printf("%s n/a %s\n", name, reason.c_str()); return; }
  }
  if (!Rt(cudaDeviceSynchronize(), "warm-up", &reason)) {
    std::printf("%s n/a %s\n", name, reason.c_str());
    return;
  }
  std::vector<double> us;
  for (int s = 0; s < g_samples; ++s) {
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    for (int i = 0; i < g_iters && ok; ++i) ok = launch(&reason);
    auto t1 = std::chrono::steady_clock::now();
    cudaError_t sync = cudaDeviceSynchronize();
    if (!ok || !Rt(sync, "sync", &reason)) {
      std::printf("%s n/a %s\n", name, reason.c_str());
      return;
    }
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / g_iters);
  }
  std::printf("%s", name);
  for (double v : us) std::printf(" %.5f", v);
  std::printf("\n");
  std::fflush(stdout);
}

template <typename T>
bool Entry(const char* symbol, T* out, std::string* reason) {
  cudaDriverEntryPointQueryResult status;
  void* fn = nullptr;
  cudaError_t err =
      cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status);
  if (err != cudaSuccess || status != cudaDriverEntryPointSuccess || fn == nullptr) {
    *reason = std::string("no driver entry point ") + symbol;
    return false;
  }
  *out = reinterpret_cast<T>(fn);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <cubin> <iters> <samples> <warmup>\n", argv[0]);
    return 2;
  }
  g_iters = std::atoi(argv[2]);
  g_samples = std::atoi(argv[3]);
  g_warmup = std::atoi(argv[4]);
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.empty()) { std::fprintf(stderr, "cannot read %s\n", argv[1]); return 2; }

  std::string reason;
  if (!Rt(cudaFree(nullptr), "cudaFree(0)", &reason)) {
    std::fprintf(stderr, "%s\n", reason.c_str());
    return 1;
  }
  float* bufs["""
        + str(N_WIDE - 1)
        + r"""];
  for (auto& b : bufs) cudaMalloc(&b, 4 * sizeof(float));
  int n = 1;
  void* args3[] = {&bufs[0], &bufs[1], &bufs[2], &n};
  void* args16["""
        + str(N_WIDE)
        + r"""];
  for (int i = 0; i < """
        + str(N_WIDE - 1)
        + r"""; ++i) args16[i] = &bufs[i];
  args16["""
        + str(N_WIDE - 1)
        + r"""] = &n;
  cudaStream_t stream = nullptr;  // the legacy default stream, as torch's current stream is.

  // --- runtime API on kernels compiled into this program
  Run("rt_launch_3", [&](std::string* r) {
    return Rt(cudaLaunchKernel((const void*)empty, dim3(1), dim3(1), args3, 0, stream),
              "cudaLaunchKernel", r);
  });
  Run("rt_launch_16", [&](std::string* r) {
    return Rt(cudaLaunchKernel((const void*)empty16, dim3(1), dim3(1), args16, 0, stream),
              "cudaLaunchKernel", r);
  });
  cudaLaunchAttribute rt_attrs[2];
  rt_attrs[0].id = cudaLaunchAttributeClusterDimension;
  rt_attrs[0].val.clusterDim.x = 2;
  rt_attrs[0].val.clusterDim.y = 1;
  rt_attrs[0].val.clusterDim.z = 1;
  rt_attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  rt_attrs[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t rt_cfg = {};
  rt_cfg.gridDim = dim3(2);
  rt_cfg.blockDim = dim3(1);
  rt_cfg.stream = stream;
  rt_cfg.attrs = rt_attrs;
  rt_cfg.numAttrs = 2;
  Run("rt_launch_ex_attrs_3", [&](std::string* r) {
    return Rt(cudaLaunchKernelExC(&rt_cfg, (const void*)empty, args3), "cudaLaunchKernelExC", r);
  });

  // --- runtime library management (cudaLibraryLoadData / cudaKernel_t) on the CUBIN
  cudaLibrary_t rt_lib = nullptr;
  cudaKernel_t rt_k3 = nullptr;
  if (Rt(cudaLibraryLoadData(&rt_lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
         "cudaLibraryLoadData", &reason) &&
      Rt(cudaLibraryGetKernel(&rt_k3, rt_lib, "empty"), "cudaLibraryGetKernel", &reason)) {
    Run("rt_library_launch_3", [&](std::string* r) {
      return Rt(cudaLaunchKernel((const void*)rt_k3, dim3(1), dim3(1), args3, 0, stream),
                "cudaLaunchKernel", r);
    });
  } else {
    std::printf("rt_library_launch_3 n/a %s\n", reason.c_str());
  }

  // --- driver API: cuLibraryLoadData + cuLibraryGetKernel + cuLaunchKernelEx
  decltype(&cuLibraryLoadData) p_load = nullptr;
  decltype(&cuLibraryGetKernel) p_get = nullptr;
  decltype(&cuLaunchKernelEx) p_launch_ex = nullptr;
  decltype(&cuLaunchKernel) p_launch = nullptr;
  CUlibrary lib = nullptr;
  CUkernel k3 = nullptr, k16 = nullptr;
  if (Entry("cuLibraryLoadData", &p_load, &reason) &&
      Entry("cuLibraryGetKernel", &p_get, &reason) &&
      Entry("cuLaunchKernelEx", &p_launch_ex, &reason) &&
      Entry("cuLaunchKernel", &p_launch, &reason) &&
      Drv(p_load(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cuLibraryLoadData", &reason) &&
      Drv(p_get(&k3, lib, "empty"), "cuLibraryGetKernel(empty)", &reason) &&
      Drv(p_get(&k16, lib, "empty16"), "cuLibraryGetKernel(empty16)", &reason)) {
    CUlaunchConfig cfg = {};
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = nullptr;
    Run("drv_launch_ex_3", [&](std::string* r) {
      return Drv(p_launch_ex(&cfg, reinterpret_cast<CUfunction>(k3), args3, nullptr),
                 "cuLaunchKernelEx", r);
    });
    Run("drv_launch_3", [&](std::string* r) {
      return Drv(p_launch(reinterpret_cast<CUfunction>(k3), 1, 1, 1, 1, 1, 1, 0, nullptr,
                          args3, nullptr),
                 "cuLaunchKernel", r);
    });
    Run("drv_launch_ex_16", [&](std::string* r) {
      return Drv(p_launch_ex(&cfg, reinterpret_cast<CUfunction>(k16), args16, nullptr),
                 "cuLaunchKernelEx", r);
    });
    CUlaunchAttribute attrs[2];
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = 2;
    attrs[0].value.clusterDim.y = 1;
    attrs[0].value.clusterDim.z = 1;
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[1].value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg_attrs = cfg;
    cfg_attrs.gridDimX = 2;
    cfg_attrs.attrs = attrs;
    cfg_attrs.numAttrs = 2;
    Run("drv_launch_ex_attrs_3", [&](std::string* r) {
      return Drv(p_launch_ex(&cfg_attrs, reinterpret_cast<CUfunction>(k3), args3, nullptr),
                 "cuLaunchKernelEx", r);
    });
  } else {
    for (const char* name :
         {"drv_launch_ex_3", "drv_launch_3", "drv_launch_ex_16", "drv_launch_ex_attrs_3"})
      std::printf("%s n/a %s\n", name, reason.c_str());
  }
  return 0;
}
"""
    )


def parse_floor_output(text: str) -> dict[str, list[float] | str]:
    """{path: [us per launch, ...]} or {path: "reason"} from the floor program's output."""
    out: dict[str, list[float] | str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[1] == "n/a":
            out[parts[0]] = " ".join(parts[2:]) or "failed"
            continue
        try:
            out[parts[0]] = [float(p) for p in parts[1:]]
        except ValueError:
            continue
    return out
