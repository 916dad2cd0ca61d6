// positional_encoding — sinusoidal positional encoding [L, E]:
//   PE(pos, 2i) = sin(pos·w_i), PE(pos, 2i+1) = cos(pos·w_i), w_i = base^(-2i/E)
//
// Shape legend: L sequence (seq_len), E embed (d_model); pairs = ceil(E/2).
// The C++ core forms the angle in double precision; float32 pos·w_i would be
// off by ~1e-4 rad at pos ~ 2000. Here the host passes each frequency in turns
// (w_i / 2π, in double) split into three float32 parts of 12, 12 and 24
// significant bits, and pos is split into 12-bit parts, so the large partial
// products are exact in float32 and their fractional parts are exact too; the
// angle mod 2π is then good to ~1e-6 rad for any pos. sin and cos are
// evaluated by polynomials on [-π/4, π/4] after a quadrant reduction, rather
// than by the builtins (whose accuracy WGSL leaves loose).
//   freq [pairs] vec4 (f1, f2, f3, 0);  out [L, E]

struct Params {
  seq_len: u32,   // L
  d_model: u32,   // E
  pairs: u32,     // ceil(E / 2)
  n: u32,         // L · pairs
}

@group(0) @binding(0) var<storage, read> freq: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

// #include tiles

const TWO_PI = 6.283185307179586;

// t - round(t), in [-0.5, 0.5]; exact for float32 t.
fn centred_fract(t: f32) -> f32 {
  return t - round(t);
}

fn add_turns(acc: f32, term: f32) -> f32 {
  return centred_fract(acc + centred_fract(term));
}

fn sin_poly(x: f32) -> f32 {
  let x2 = x * x;
  return x * (1.0 + x2 * (-1.6666666666666666e-1 + x2 * (8.333333333333333e-3 +
         x2 * (-1.984126984126984e-4 + x2 * 2.7557319223985893e-6))));
}

fn cos_poly(x: f32) -> f32 {
  let x2 = x * x;
  return 1.0 + x2 * (-0.5 + x2 * (4.1666666666666664e-2 + x2 * (-1.388888888888889e-3 +
         x2 * (2.48015873015873e-5 + x2 * -2.755731922398589e-7))));
}

@compute @workgroup_size(WG_1D, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let idx = (wid.x + wid.y * nwg.x) * WG_1D + li;
  if (idx >= params.n) {
    return;
  }
  let pos = idx / params.pairs;
  let c = idx % params.pairs;
  let f = freq[c];
  let p0 = f32(pos & 0xfffu);
  let p1 = f32(pos & 0xfff000u);
  let p2 = f32(pos & 0xff000000u);
  // Smallest partial products first.
  var t = centred_fract(p0 * f.z);
  t = add_turns(t, p1 * f.z);
  t = add_turns(t, p2 * f.z);
  t = add_turns(t, p0 * f.y);
  t = add_turns(t, p1 * f.y);
  t = add_turns(t, p2 * f.y);
  t = add_turns(t, p0 * f.x);
  t = add_turns(t, p1 * f.x);
  t = add_turns(t, p2 * f.x);
  // angle = 2π·t = 2π·(quarter/4 + r), r in [-1/8, 1/8].
  let quarter = round(t * 4.0);
  let x = (t - quarter * 0.25) * TWO_PI;
  let s = sin_poly(x);
  let co = cos_poly(x);
  var sin_v = s;
  var cos_v = co;
  switch (i32(quarter) & 3) {
    case 1: { sin_v = co; cos_v = -s; }
    case 2: { sin_v = -s; cos_v = -co; }
    case 3: { sin_v = -co; cos_v = s; }
    default: {}
  }
  let o = pos * params.d_model + 2u * c;
  out[o] = sin_v;
  if (2u * c + 1u < params.d_model) {
    out[o + 1u] = cos_v;
  }
}
