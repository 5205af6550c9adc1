// sglang's reflected object (sglang 0.5.23, kernels/jit/csrc/ngram_corpus/ngram_corpus_ffi.cpp),
// with its ngram engine replaced by a stub: TVM_FFI_DECLARE_OBJECT_INFO_FINAL, _type_mutable,
// refl::ObjectDef with refl::init<...>() and "__init__", methods taking TensorView and
// const std::string&, and the registration exported as a function.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ngram {
struct Ngram {
  explicit Ngram(size_t capacity) : capacity(capacity) {}
  void asyncInsert(std::vector<std::vector<int32_t>>&& tokens) { inserted += tokens.size(); }
  void finishExternalCorpusLoad(const std::string& id) { last = id; }
  size_t capacity;
  size_t inserted = 0;
  std::string last;
};
}  // namespace ngram

namespace sglang {

struct NgramCorpusObj : public tvm::ffi::Object {
 public:
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("sgl.test.NgramCorpus", NgramCorpusObj, tvm::ffi::Object);
  static constexpr bool _type_mutable = true;

  NgramCorpusObj(int64_t capacity, int64_t max_trie_depth) {
    (void)max_trie_depth;
    ngram_ = std::make_unique<ngram::Ngram>(static_cast<size_t>(capacity));
  }

  void async_insert(const tvm::ffi::TensorView tokens_flat, const tvm::ffi::TensorView offsets) {
    auto* data = static_cast<const int32_t*>(tokens_flat.data_ptr());
    auto* offs = static_cast<const int64_t*>(offsets.data_ptr());
    int64_t batch_size = offsets.size(0) - 1;
    std::vector<std::vector<int32_t>> tokens(batch_size);
    for (int64_t i = 0; i < batch_size; ++i) {
      tokens[i].assign(data + offs[i], data + offs[i + 1]);
    }
    ngram_->asyncInsert(std::move(tokens));
  }

  void finish_external_corpus_load(const std::string& corpus_id) {
    ngram_->finishExternalCorpusLoad(corpus_id);
  }

  std::string list_external_corpora() {
    return ngram_->last + "\t" + std::to_string(ngram_->inserted);
  }

  std::unique_ptr<ngram::Ngram> ngram_;
};

void register_ngram_corpus() {
  namespace refl = tvm::ffi::reflection;
  refl::ObjectDef<NgramCorpusObj>()
      .def(refl::init<int64_t, int64_t>(), "__init__")
      .def("async_insert", &NgramCorpusObj::async_insert)
      .def("finish_external_corpus_load", &NgramCorpusObj::finish_external_corpus_load)
      .def("list_external_corpora", &NgramCorpusObj::list_external_corpora);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(register_once, register_ngram_corpus);

}  // namespace sglang
