// dropout — inverted dropout in place on the layer's MHA output [B, L, E].
//
// Shape legend: B batch, L sequence, E embed; n = B·L·E elements.
// Element i is dropped when dropoutUniform(seed, i) < p, otherwise scaled by
// keep_scale = 1/(1-p) (computed in float32 on the host, as the C++ does):
//   h = pcg(seed ^ pcg(i)), u = (h >> 8) / 2^24,
//   pcg(x): s = x·747796405 + 2891336453; w = ((s >> ((s >> 28) + 4)) ^ s)·277803737;
//           return (w >> 22) ^ w   (uint32 arithmetic)
// the same counter hash as DropoutUniform in src/dropout.cpp, so the mask
// matches the wasm backend bit for bit.

struct Params {
  n: u32,
  seed: u32,
  p: f32,
  keep_scale: f32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * 256u + li;
  if (i >= params.n) {
    return;
  }
  let h = pcg(params.seed ^ pcg(i));
  let u = f32(h >> 8u) * (1.0 / 16777216.0);
  x[i] = select(x[i] * params.keep_scale, 0.0, u < params.p);
}
