// Embind bindings: thin by design. Every function takes plain numbers
// (sizes, and pointers into wasm memory that the JS wrapper allocated), calls
// the C++ core and returns a status code; the message of the last failure is
// read with lastError(). No C++ exception or JS exception crosses this layer,
// so nothing is left allocated when a call fails. Objects are passed as opaque
// handles that the JS wrapper owns and frees with *Destroy.
#include <emscripten/bind.h>
#include <emscripten/emscripten.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"

namespace {

using attnlab::MaskKind;
using attnlab::MaskSpec;
using attnlab::Status;

std::string g_last_error;

int Report(const Status& s) {
  if (s.ok()) return 0;
  g_last_error = s.message;
  return static_cast<int>(s.code);
}

template <class T>
T* Ptr(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

std::string LastError() { return g_last_error; }

// Bytes currently allocated from the wasm heap by malloc (dlmalloc's
// mallinfo().uordblks): the leak tests compare it before and after.
double HeapBytesInUse() { return static_cast<double>(mallinfo().uordblks); }
std::string KernelArchName() { return attnlab::KernelArch(); }

MaskSpec MakeMask(bool causal, uintptr_t lengths, int kind, uintptr_t data,
                  double mb, double mh, double mq, double mk) {
  MaskSpec m;
  m.causal = causal;
  m.lengths = Ptr<const int32_t>(lengths);
  m.kind = static_cast<MaskKind>(kind);
  m.data = Ptr<const float>(data);
  m.shape[0] = static_cast<int64_t>(mb);
  m.shape[1] = static_cast<int64_t>(mh);
  m.shape[2] = static_cast<int64_t>(mq);
  m.shape[3] = static_cast<int64_t>(mk);
  return m;
}

int PositionalEncoding(double seq_len, double d_model, double base,
                       uintptr_t out) {
  return Report(attnlab::PositionalEncoding(static_cast<int64_t>(seq_len),
                                            static_cast<int64_t>(d_model), base,
                                            Ptr<float>(out)));
}

// Mask arguments, in order: causal, lengthsPtr, kind, dataPtr, mB, mH, mLq, mLk.
int Sdpa(double b, double h, double lq, double lk, double d, double dv,
         uintptr_t q, uintptr_t k, uintptr_t v, bool has_scale, double scale,
         bool causal, uintptr_t lengths, int kind, uintptr_t mask, double mb,
         double mh, double mq, double mk, uintptr_t out, uintptr_t weights) {
  attnlab::SdpaArgs a;
  a.batch = static_cast<int64_t>(b);
  a.heads = static_cast<int64_t>(h);
  a.lq = static_cast<int64_t>(lq);
  a.lk = static_cast<int64_t>(lk);
  a.d = static_cast<int64_t>(d);
  a.dv = static_cast<int64_t>(dv);
  a.q = Ptr<const float>(q);
  a.k = Ptr<const float>(k);
  a.v = Ptr<const float>(v);
  a.has_scale = has_scale;
  a.scale = static_cast<float>(scale);
  a.mask = MakeMask(causal, lengths, kind, mask, mb, mh, mq, mk);
  a.output = Ptr<float>(out);
  a.weights = Ptr<float>(weights);
  return Report(attnlab::ScaledDotProductAttention(a));
}

uintptr_t MhaCreate(double embed_dim, double num_heads, double kdim,
                    double vdim, bool bias, double seed) {
  attnlab::MhaConfig c;
  c.embed_dim = static_cast<int64_t>(embed_dim);
  c.num_heads = static_cast<int64_t>(num_heads);
  c.kdim = static_cast<int64_t>(kdim);
  c.vdim = static_cast<int64_t>(vdim);
  c.bias = bias;
  c.seed = static_cast<uint32_t>(seed);
  Status s;
  auto m = attnlab::MultiHeadAttention::Create(c, &s);
  if (!m) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(m.release());
}

void MhaDestroy(uintptr_t h) {
  delete Ptr<attnlab::MultiHeadAttention>(h);
}

int MhaSetWeight(uintptr_t h, int id, uintptr_t data, int layout) {
  return Report(Ptr<attnlab::MultiHeadAttention>(h)->SetWeight(
      static_cast<attnlab::WeightId>(id), Ptr<const float>(data),
      static_cast<attnlab::WeightLayout>(layout)));
}

int MhaGetWeight(uintptr_t h, int id, int layout, uintptr_t out) {
  return Report(Ptr<attnlab::MultiHeadAttention>(h)->GetWeight(
      static_cast<attnlab::WeightId>(id),
      static_cast<attnlab::WeightLayout>(layout), Ptr<float>(out)));
}

double MhaHeldBytes(uintptr_t h) {
  return static_cast<double>(Ptr<attnlab::MultiHeadAttention>(h)->HeldBytes());
}

int MhaForward(uintptr_t h, double batch, double lq, double lk,
               uintptr_t query, uintptr_t key, uintptr_t value, bool causal,
               uintptr_t lengths, int kind, uintptr_t mask, double mb,
               double mh, double mq, double mk, uintptr_t out,
               uintptr_t weights, bool average, uintptr_t cache) {
  attnlab::MhaForwardArgs a;
  a.batch = static_cast<int64_t>(batch);
  a.lq = static_cast<int64_t>(lq);
  a.lk = static_cast<int64_t>(lk);
  a.query = Ptr<const float>(query);
  a.key = Ptr<const float>(key);
  a.value = Ptr<const float>(value);
  a.mask = MakeMask(causal, lengths, kind, mask, mb, mh, mq, mk);
  a.output = Ptr<float>(out);
  a.weights = Ptr<float>(weights);
  a.average_weights = average;
  a.cache = Ptr<attnlab::KvCache>(cache);
  return Report(Ptr<attnlab::MultiHeadAttention>(h)->Forward(a));
}

// A key/value cache of the MHA `h` (0 on failure: see lastError()).
uintptr_t KvCacheCreate(uintptr_t h, double batch, double max_length) {
  Status s;
  auto c = Ptr<attnlab::MultiHeadAttention>(h)->CreateKvCache(
      static_cast<int64_t>(batch), static_cast<int64_t>(max_length), &s);
  if (!c) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(c.release());
}

void KvCacheDestroy(uintptr_t c) { delete Ptr<attnlab::KvCache>(c); }
void KvCacheReset(uintptr_t c) { Ptr<attnlab::KvCache>(c)->Reset(); }
int KvCacheTruncate(uintptr_t c, double length) {
  return Report(Ptr<attnlab::KvCache>(c)->Truncate(static_cast<int64_t>(length)));
}
double KvCacheLength(uintptr_t c) {
  return static_cast<double>(Ptr<attnlab::KvCache>(c)->length());
}
double KvCacheHeldBytes(uintptr_t c) {
  return static_cast<double>(Ptr<attnlab::KvCache>(c)->HeldBytes());
}

uintptr_t LayerCreate(double embed_dim, double num_heads, bool bias,
                      double seed, double dropout, double eps) {
  attnlab::LayerConfig c;
  c.mha.embed_dim = static_cast<int64_t>(embed_dim);
  c.mha.num_heads = static_cast<int64_t>(num_heads);
  c.mha.bias = bias;
  c.mha.seed = static_cast<uint32_t>(seed);
  c.dropout = static_cast<float>(dropout);
  c.eps = static_cast<float>(eps);
  Status s;
  auto l = attnlab::SelfAttentionLayer::Create(c, &s);
  if (!l) {
    Report(s);
    return 0;
  }
  return reinterpret_cast<uintptr_t>(l.release());
}

void LayerDestroy(uintptr_t h) {
  delete Ptr<attnlab::SelfAttentionLayer>(h);
}

// The layer's MHA, as a handle for the mha* weight functions (owned by the
// layer: never pass it to mhaDestroy).
uintptr_t LayerMha(uintptr_t h) {
  return reinterpret_cast<uintptr_t>(&Ptr<attnlab::SelfAttentionLayer>(h)->mha());
}

int LayerSetNorm(uintptr_t h, uintptr_t gamma, uintptr_t beta) {
  return Report(Ptr<attnlab::SelfAttentionLayer>(h)->SetNorm(
      Ptr<const float>(gamma), Ptr<const float>(beta)));
}

int LayerGetNorm(uintptr_t h, uintptr_t gamma, uintptr_t beta) {
  return Report(Ptr<attnlab::SelfAttentionLayer>(h)->GetNorm(
      Ptr<float>(gamma), Ptr<float>(beta)));
}

double LayerHeldBytes(uintptr_t h) {
  return static_cast<double>(Ptr<attnlab::SelfAttentionLayer>(h)->HeldBytes());
}

int LayerForward(uintptr_t h, double batch, double seq_len, uintptr_t x,
                 bool causal, uintptr_t lengths, int kind, uintptr_t mask,
                 double mb, double mh, double mq, double mk, bool training,
                 double dropout_seed, uintptr_t out, uintptr_t weights,
                 bool average) {
  attnlab::LayerForwardArgs a;
  a.batch = static_cast<int64_t>(batch);
  a.seq_len = static_cast<int64_t>(seq_len);
  a.x = Ptr<const float>(x);
  a.mask = MakeMask(causal, lengths, kind, mask, mb, mh, mq, mk);
  a.training = training;
  a.dropout_seed = static_cast<uint32_t>(dropout_seed);
  a.output = Ptr<float>(out);
  a.weights = Ptr<float>(weights);
  a.average_weights = average;
  return Report(Ptr<attnlab::SelfAttentionLayer>(h)->Forward(a));
}

int AddLayerNorm(double rows, double dim, uintptr_t x, uintptr_t residual,
                 uintptr_t gamma, uintptr_t beta, double eps, uintptr_t y) {
  return Report(attnlab::AddLayerNorm(
      static_cast<int64_t>(rows), static_cast<int64_t>(dim), Ptr<const float>(x),
      Ptr<const float>(residual), Ptr<const float>(gamma),
      Ptr<const float>(beta), static_cast<float>(eps), Ptr<float>(y)));
}

double DropoutUniform(double seed, double i) {
  return attnlab::DropoutUniform(static_cast<uint32_t>(seed),
                                 static_cast<uint32_t>(i));
}

// Benchmark hook: median-free raw timing of the packed GEMM kernel,
// C[M,N] = A[M,K]·B[K,N], `iterations` times; returns milliseconds per call.
// B is packed once outside the timed loop (as weights are at setWeights).
double BenchGemm(double m_in, double n_in, double k_in, double iterations) {
  const int64_t m = static_cast<int64_t>(m_in), n = static_cast<int64_t>(n_in),
                k = static_cast<int64_t>(k_in);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
      c(static_cast<size_t>(m * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.1f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.1f;
  float* packed = static_cast<float*>(
      std::aligned_alloc(64, static_cast<size_t>((attnlab::kernels::PackedFloats(k, n) * 4 + 63) / 64 * 64)));
  const attnlab::kernels::PackedB pb =
      attnlab::kernels::PackB(k, n, b.data(), n, 1, packed);
  attnlab::kernels::Gemm(m, n, k, a.data(), k, pb, nullptr, c.data(), n);
  const double t0 = emscripten_get_now();
  for (int i = 0; i < static_cast<int>(iterations); ++i) {
    attnlab::kernels::Gemm(m, n, k, a.data(), k, pb, nullptr, c.data(), n);
  }
  const double t1 = emscripten_get_now();
  std::free(packed);
  return (t1 - t0) / iterations;
}

}  // namespace

EMSCRIPTEN_BINDINGS(attention_lab) {
  using emscripten::function;
  function("lastError", &LastError);
  function("kernelArch", &KernelArchName);
  function("heapBytesInUse", &HeapBytesInUse);
  function("positionalEncoding", &PositionalEncoding);
  function("sdpa", &Sdpa);
  function("mhaCreate", &MhaCreate);
  function("mhaDestroy", &MhaDestroy);
  function("mhaSetWeight", &MhaSetWeight);
  function("mhaGetWeight", &MhaGetWeight);
  function("mhaHeldBytes", &MhaHeldBytes);
  function("mhaForward", &MhaForward);
  function("layerCreate", &LayerCreate);
  function("layerDestroy", &LayerDestroy);
  function("layerMha", &LayerMha);
  function("layerSetNorm", &LayerSetNorm);
  function("layerGetNorm", &LayerGetNorm);
  function("layerHeldBytes", &LayerHeldBytes);
  function("layerForward", &LayerForward);
  function("addLayerNorm", &AddLayerNorm);
  function("dropoutUniform", &DropoutUniform);
  function("kvCacheCreate", &KvCacheCreate);
  function("kvCacheDestroy", &KvCacheDestroy);
  function("kvCacheReset", &KvCacheReset);
  function("kvCacheTruncate", &KvCacheTruncate);
  function("kvCacheLength", &KvCacheLength);
  function("kvCacheHeldBytes", &KvCacheHeldBytes);
  function("benchGemm", &BenchGemm);
}
