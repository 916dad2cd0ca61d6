// logit_softcap — the final logits soft-capped in place, x = c·tanh(x/c)
// (Gemma 2's final_logit_softcapping; the block graph's final_softcap,
// src/train/transformer_graph.cpp Logits), by the attention scores' rule
// (include/softcap.wgsl).
//
// Shape legend: L sequence, V vocabulary; x [L, V], n = L·V.

struct Params {
  n: u32,
  cap: f32,          // c > 0
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;

// #include tiles

// #include softcap

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (i >= params.n) {
    return;
  }
  x[i] = softcap(x[i], params.cap);
}
