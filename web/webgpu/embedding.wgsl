// embedding — the first step of a whole model's forward (lab.loadModel on
// a webgpu lab, web/lib/webgpu-model.js): x [L, E] = the word embeddings of
// the token ids, plus the learned position embeddings of positions pos0 + l
// and the token-type 0 embedding (BERT), each optional by flag; summed in
// the order of the C++ block graph (word + position, then + type).
//
// Shape legend: L sequence, E embed, V vocabulary, P positions, T token types.
//   ids     [L] u32 (checked < V by the wrapper)
//   w       [E, V]  the tables as the model keeps them on the GPU: transposed
//   pos     [E, P]  (keras [in, out], as every matrix of the model), so that
//   types   [E, T]  the word table is also the tied LM head's weight for
//                   linear.wgsl; row l gathers column ids[l]. The word
//                   table w is float32 or, from an F16/BF16 file, 16-bit
//                   (HALF_WEIGHTS, include/half_weights.wgsl), as linear's W
//   x       [L, E]

struct Params {
  rows: u32,        // L
  dim: u32,         // E
  vocab: u32,       // V
  has_pos: u32,
  positions: u32,   // P
  pos0: u32,
  has_type: u32,
  types: u32,       // T
  n: u32,           // L · E
  scale: f32,       // embedScale (1: the word embeddings as they are)
  w_bf16: u32,      // HALF_WEIGHTS: 1 BF16, 0 F16
}

@group(0) @binding(0) var<storage, read> ids: array<u32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;  // the word table: float32 bits, or 16-bit pairs
@group(0) @binding(2) var<storage, read> pos: array<f32>;
@group(0) @binding(3) var<storage, read> types: array<f32>;
@group(0) @binding(4) var<storage, read_write> x: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

// #include tiles

// Set by the host per pipeline: the word table holds 16-bit values.
override HALF_WEIGHTS: bool = false;

// #include half_weights

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (idx >= params.n) {
    return;
  }
  let l = idx / params.dim;
  let j = idx % params.dim;
  var v = weight(j * params.vocab + ids[l]) * params.scale;
  if (params.has_pos != 0u) {
    v += pos[j * params.positions + params.pos0 + l];
  }
  if (params.has_type != 0u) {
    v += types[j * params.types];
  }
  x[idx] = v;
}
