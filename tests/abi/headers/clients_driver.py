"""Runs under apache-tvm-ffi's Python: the sglang-style reflected object built with our staging
headers (argv[1]), constructed and used as sglang's Python uses it; prints JSON results."""

import json
import sys

import torch

import tvm_ffi

m = tvm_ffi.load_module(sys.argv[1])
m.register_once()


@tvm_ffi.register_object("sgl.test.NgramCorpus")
class NgramCorpus(tvm_ffi.Object):
    pass


corpus = NgramCorpus(1024, 8)
corpus.async_insert(torch.arange(10, dtype=torch.int32), torch.tensor([0, 4, 10]))
corpus.finish_external_corpus_load("corpus-a")
out = {"listed": corpus.list_external_corpora()}
try:
    corpus.async_insert(torch.zeros(2, dtype=torch.int32), "not a tensor")
except TypeError as e:
    out["bad_argument"] = str(e).splitlines()[-1]
print(json.dumps(out))
