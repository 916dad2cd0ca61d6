// rotary_embedding — RoPE in place on a strided view of x (ONNX
// RotaryEmbedding semantics, as src/rotary_embedding.cpp RotateRows): per
// token (b, l) and head h, the pairs (x1, x2) of the first R dims become
// (c·x1 - s·x2, s·x1 + c·x2) with (c, s) the row of the cos/sin tables; the
// dims [R, D) pass through. Pairs are the halves (i, i + R/2), or
// interleaved (2i, 2i + 1).
//
// Shape legend: B batch, L sequence, H heads, D head dim, R rotary dim.
//   x          [B, L, H, D] read through strides (sb, sl, sh): [B, H, L, D],
//              [B, L, H·D] and the Q/K projections [B, L, E] alike
//   cos, sin   [rows, R/2]: the row of token (b, l) is positions[b·L + l]
//              (pos_mode 0), b·L + l (1: per-token tables), or pos0 + l (2)
//   positions  [B·L] (pos_mode 0)
// The tables come from the caller (the C++ core computes them when the user
// gives none: lab.rotaryCache), so the angles have one source.

struct Params {
  len: u32,          // L
  heads: u32,        // H
  sb: u32,
  sl: u32,
  sh: u32,
  half: u32,         // R / 2
  interleaved: u32,
  pos_mode: u32,     // 0 positions, 1 per-token rows, 2 pos0 + l
  pos0: u32,
  n: u32,            // B · L · H · R/2
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> cos_t: array<f32>;
@group(0) @binding(2) var<storage, read> sin_t: array<f32>;
@group(0) @binding(3) var<storage, read> positions: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;

// #include tiles

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (idx >= params.n) {
    return;
  }
  let i = idx % params.half;
  let h = (idx / params.half) % params.heads;
  let tok = idx / (params.half * params.heads);
  let l = tok % params.len;
  let b = tok / params.len;
  var row = tok;
  if (params.pos_mode == 0u) {
    row = positions[tok];
  } else if (params.pos_mode == 2u) {
    row = params.pos0 + l;
  }
  let c = cos_t[row * params.half + i];
  let s = sin_t[row * params.half + i];
  let base = b * params.sb + l * params.sl + h * params.sh;
  var i1 = base + i;
  var i2 = base + i + params.half;
  if (params.interleaved != 0u) {
    i1 = base + 2u * i;
    i2 = i1 + 1u;
  }
  let x1 = x[i1];
  let x2 = x[i2];
  x[i1] = c * x1 - s * x2;
  x[i2] = s * x1 + c * x2;
}
