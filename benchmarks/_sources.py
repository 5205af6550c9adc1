"""C++/CUDA sources the benchmarks build. Plain strings and string generators, nothing else.

The wrappers use only API that this project and apache-tvm-ffi 0.1.15 share (TensorView,
TVM_FFI_DLL_EXPORT_TYPED_FUNC, TVMFFIEnvGetStream, the runtime-API spelling of
``CubinKernel::Launch``), so the same text is built by both and the comparison is like for like.
"""

from __future__ import annotations

# A function that does nothing with 3 tensors: the cost of the binding alone (call_overhead).
NOOP_CPP = """\
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

void noop(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}
void noop0() {}
void noop1(tvm::ffi::TensorView a) {}
// What a wrapper returning a new output costs: one allocation through the caller's framework.
tvm::ffi::Tensor alloc_like(tvm::ffi::TensorView a, tvm::ffi::TensorView b,
                            tvm::ffi::TensorView c) {
  return tvm::ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, a.shape(), a.dtype(), a.device());
}
"""
NOOP_FUNCTIONS = ["noop", "noop0", "noop1", "alloc_like"]

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
    """launch3 / launch16 / nolaunch / getstream, built alike by this project and the reference."""
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

// The binding plus the stream lookup, no launch: Launch3 minus this is the launch itself.
// The volatile store keeps the compiler from dropping the lookup.
void* volatile g_stream_sink = nullptr;
void GetStreamOnly(TensorView a, TensorView b, TensorView c, int64_t n) {{
  g_stream_sink = StreamOf(a);
}}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch3, Launch3);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(launch16, Launch16);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(nolaunch, NoLaunch);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(getstream, GetStreamOnly);
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

# Exported loops of the floor module: name -> (the launch statement, what it is). Each runs
# `n` launches of the same empty kernel, on the stream and with the arguments of floor_setup.
FLOOR_LOOPS = {
    "floor_cuda_launch_kernel": (
        "CheckRt(cudaLaunchKernel(reinterpret_cast<const void*>(f.rt3), ::dim3(1), ::dim3(1), "
        'f.args3, 0, f.stream), "cudaLaunchKernel")',
        "cudaLaunchKernel, cudaKernel_t from cudaLibraryLoadData",
    ),
    "floor_cuda_launch_kernel_static": (
        "CheckRt(cudaLaunchKernel(reinterpret_cast<const void*>(empty_static), ::dim3(1), "
        '::dim3(1), f.args3, 0, f.stream), "cudaLaunchKernel")',
        "cudaLaunchKernel, kernel compiled into the module",
    ),
    "floor_cu_launch_kernel": (
        "CheckDrv(f.launch(reinterpret_cast<CUfunction>(f.k3), 1, 1, 1, 1, 1, 1, 0, "
        'f.cu_stream, f.args3, nullptr), "cuLaunchKernel")',
        "cuLaunchKernel, CUkernel from cuLibraryLoadData",
    ),
    "floor_cu_launch_kernel_ex": (
        "CheckDrv(f.launch_ex(&f.cfg, reinterpret_cast<CUfunction>(f.k3), f.args3, nullptr), "
        '"cuLaunchKernelEx")',
        "cuLaunchKernelEx, CUkernel from cuLibraryLoadData",
    ),
    "floor_cuda_launch_kernel_16": (
        "CheckRt(cudaLaunchKernel(reinterpret_cast<const void*>(f.rt16), ::dim3(1), ::dim3(1), "
        'f.args16, 0, f.stream), "cudaLaunchKernel")',
        "cudaLaunchKernel, 16 arguments",
    ),
    "floor_cu_launch_kernel_16": (
        "CheckDrv(f.launch(reinterpret_cast<CUfunction>(f.k16), 1, 1, 1, 1, 1, 1, 0, "
        'f.cu_stream, f.args16, nullptr), "cuLaunchKernel")',
        "cuLaunchKernel, 16 arguments",
    ),
    "floor_cu_launch_kernel_ex_16": (
        "CheckDrv(f.launch_ex(&f.cfg, reinterpret_cast<CUfunction>(f.k16), f.args16, nullptr), "
        '"cuLaunchKernelEx")',
        "cuLaunchKernelEx, 16 arguments",
    ),
    "floor_cuda_launch_kernel_ex_attrs": (
        "CheckRt(cudaLaunchKernelExC(&f.rt_cfg_attrs, reinterpret_cast<const void*>(f.rt3), "
        'f.args3), "cudaLaunchKernelExC")',
        "cudaLaunchKernelExC, cluster 2x1x1 + PDL",
    ),
    "floor_cu_launch_kernel_ex_attrs": (
        "CheckDrv(f.launch_ex(&f.cfg_attrs, reinterpret_cast<CUfunction>(f.k3), f.args3, "
        'nullptr), "cuLaunchKernelEx")',
        "cuLaunchKernelEx, cluster 2x1x1 + PDL",
    ),
}

_FLOOR_HEAD = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// The kernel of the CUBIN compiled into this module too: the classic cudaLaunchKernel path.
extern "C" __global__ void empty_static(float* a, float* b, float* c, int n) {}

namespace {
using tvm::ffi::TensorView;

constexpr int kPtrs = NPTRS;

// Everything the loops read, filled once by floor_setup: one per process, like a user's
// own C++ extension would hold its kernels.
struct Floor {
  bool ready = false;
  std::vector<char> image;  // kept alive for the libraries loaded from it
  cudaStream_t stream = nullptr;
  CUstream cu_stream = nullptr;
  void* ptrs[kPtrs] = {};
  int n = 0;
  void* args3[4] = {};
  void* args16[kPtrs + 1] = {};
  cudaLibrary_t rt_lib = nullptr;
  cudaKernel_t rt3 = nullptr;
  cudaKernel_t rt16 = nullptr;
  CUlibrary lib = nullptr;
  CUkernel k3 = nullptr;
  CUkernel k16 = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuLaunchKernelEx) launch_ex = nullptr;
  CUlaunchConfig cfg = {};
  CUlaunchConfig cfg_attrs = {};
  CUlaunchAttribute attrs[2] = {};
  cudaLaunchConfig_t rt_cfg_attrs = {};
  cudaLaunchAttribute rt_attrs[2] = {};
};

Floor g_floor;

inline void CheckRt(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    TVM_FFI_THROW(RuntimeError) << what << ": " << cudaGetErrorName(err);
  }
}

inline void CheckDrv(CUresult err, const char* what) {
  if (err != CUDA_SUCCESS) {
    TVM_FFI_THROW(RuntimeError) << what << ": CUresult " << static_cast<int>(err);
  }
}

// Driver entry points through cudart, so that the module links only cudart (as user code
// built by load_inline does).
template <typename T>
T Entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status;
  cudaError_t err =
      cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status);
  if (err != cudaSuccess || status != cudaDriverEntryPointSuccess || fn == nullptr) {
    TVM_FFI_THROW(RuntimeError) << "no driver entry point " << symbol;
  }
  return reinterpret_cast<T>(fn);
}

Floor& Ready() {
  if (!g_floor.ready) {
    TVM_FFI_THROW(RuntimeError) << "floor_setup was not called";
  }
  return g_floor;
}
}  // namespace
"""

_FLOOR_SETUP = r"""
// Loads the CUBIN at `cubin_path` through both APIs, and keeps the stream and the tensors'
// pointers: every loop launches with these, like the Python rows do.
void FloorSetup(tvm::ffi::String cubin_path, int64_t stream, PARAMS) {
  Floor& f = g_floor;
  std::string path(cubin_path.data(), cubin_path.size());
  std::ifstream file(path, std::ios::binary);
  f.image.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  if (f.image.empty()) {
    TVM_FFI_THROW(RuntimeError) << "cannot read " << path;
  }
  f.stream = reinterpret_cast<cudaStream_t>(static_cast<intptr_t>(stream));
  f.cu_stream = reinterpret_cast<CUstream>(f.stream);
PTRS
  f.n = 1024;
  for (int i = 0; i < 3; ++i) f.args3[i] = &f.ptrs[i];
  f.args3[3] = &f.n;
  for (int i = 0; i < kPtrs; ++i) f.args16[i] = &f.ptrs[i];
  f.args16[kPtrs] = &f.n;

  CheckRt(cudaLibraryLoadData(&f.rt_lib, f.image.data(), nullptr, nullptr, 0, nullptr, nullptr,
                              0),
          "cudaLibraryLoadData");
  CheckRt(cudaLibraryGetKernel(&f.rt3, f.rt_lib, "empty"), "cudaLibraryGetKernel(empty)");
  CheckRt(cudaLibraryGetKernel(&f.rt16, f.rt_lib, "empty16"), "cudaLibraryGetKernel(empty16)");

  auto load = Entry<decltype(&cuLibraryLoadData)>("cuLibraryLoadData");
  auto get = Entry<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
  f.launch = Entry<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  f.launch_ex = Entry<decltype(&cuLaunchKernelEx)>("cuLaunchKernelEx");
  CheckDrv(load(&f.lib, f.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
           "cuLibraryLoadData");
  CheckDrv(get(&f.k3, f.lib, "empty"), "cuLibraryGetKernel(empty)");
  CheckDrv(get(&f.k16, f.lib, "empty16"), "cuLibraryGetKernel(empty16)");

  f.cfg.gridDimX = f.cfg.gridDimY = f.cfg.gridDimZ = 1;
  f.cfg.blockDimX = f.cfg.blockDimY = f.cfg.blockDimZ = 1;
  f.cfg.hStream = f.cu_stream;
  f.attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  f.attrs[0].value.clusterDim.x = 2;
  f.attrs[0].value.clusterDim.y = 1;
  f.attrs[0].value.clusterDim.z = 1;
  f.attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  f.attrs[1].value.programmaticStreamSerializationAllowed = 1;
  f.cfg_attrs = f.cfg;
  f.cfg_attrs.gridDimX = 2;
  f.cfg_attrs.attrs = f.attrs;
  f.cfg_attrs.numAttrs = 2;

  f.rt_attrs[0].id = cudaLaunchAttributeClusterDimension;
  f.rt_attrs[0].val.clusterDim.x = 2;
  f.rt_attrs[0].val.clusterDim.y = 1;
  f.rt_attrs[0].val.clusterDim.z = 1;
  f.rt_attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  f.rt_attrs[1].val.programmaticStreamSerializationAllowed = 1;
  f.rt_cfg_attrs.gridDim = ::dim3(2);
  f.rt_cfg_attrs.blockDim = ::dim3(1);
  f.rt_cfg_attrs.dynamicSmemBytes = 0;
  f.rt_cfg_attrs.stream = f.stream;
  f.rt_cfg_attrs.attrs = f.rt_attrs;
  f.rt_cfg_attrs.numAttrs = 2;
  f.ready = true;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(floor_setup, FloorSetup);
"""


def floor_module_source() -> str:
    """The C++ floor as a module loaded into the benchmark's own process.

    ``floor_setup(cubin_path, stream_handle, *15 tensors)`` loads the CUBIN every row launches
    (cudaLibraryLoadData and cuLibraryLoadData) and keeps the stream and the pointers; then
    each ``FLOOR_LOOPS`` function ``f(n)`` runs n launches in a C++ loop: one call per batch,
    so the binding's cost is spread over the batch. Only shared API (TensorView, String,
    TVM_FFI_THROW, the export macro), so apache-tvm-ffi builds it too.
    """
    n_ptrs = N_WIDE - 1
    setup = _FLOOR_SETUP.replace(
        "PARAMS", ", ".join(f"TensorView a{i}" for i in range(n_ptrs))
    ).replace("PTRS", "\n".join(f"  f.ptrs[{i}] = a{i}.data_ptr();" for i in range(n_ptrs)))
    loops = []
    for name, (statement, what) in FLOOR_LOOPS.items():
        fn = "Loop_" + name
        loops.append(
            f"// {what}\n"
            f"void {fn}(int64_t n) {{\n"
            f"  Floor& f = Ready();\n"
            f"  for (int64_t i = 0; i < n; ++i) {statement};\n"
            f"}}\n"
            f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, {fn});\n"
        )
    return _FLOOR_HEAD.replace("NPTRS", str(n_ptrs)) + setup + "\n" + "\n".join(loops)
