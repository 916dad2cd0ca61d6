// attention_weighted_sum — O = P·V per (batch, head): the weighted sum of the
// values by the attention weights, on the path that also returns the weights.
//
// Shape legend: B batch, H heads, Lq/Lk sequence, Dv value head dim.
//   P [B, H, Lq, Lk]  the weights, contiguous
//   V [B, Hkv, Lk, Dv] read through strides (v_sb, v_sh, v_sl): heads are split
//                     by index arithmetic, e.g. V [B, Lk, E] with sh = D, sl = E;
//                     query head h reads kv head h·Hkv/H (GQA/MQA, no copies)
//   O [B, H, Lq, Dv]  written through strides (o_sb, o_sh, o_sl): heads are
//                     merged the same way, e.g. into [B, Lq, E]
// Tiling as in linear.wgsl: 8×8 invocations, a 64×64 tile of O, 8×8 outputs
// per invocation, Lk stepped by 16 through workgroup memory.

struct Params {
  heads: u32,           // H
  kv_heads: u32,        // Hkv (H % Hkv == 0)
  lq: u32,              // Lq
  lk: u32,              // Lk
  dv: u32,              // Dv
  v_sb: u32,
  v_sh: u32,
  v_sl: u32,
  o_sb: u32,
  o_sh: u32,
  o_sl: u32,
  tiles_n: u32,         // ceil(Dv / 64)
  tiles_per_head: u32,  // ceil(Lq / 64) · tiles_n
  tiles: u32,           // B · H · tiles_per_head
}

@group(0) @binding(0) var<storage, read> p: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

// #include tiles

// #include register_tile

var<workgroup> p_tile: array<f32, 1024>;  // [TILE_K][64 rows]
var<workgroup> v_tile: array<f32, 1024>;  // [TILE_K][64 columns]

// P[i0 + idx / 16, k0 + idx % 16] into p_tile (0 outside P).
fn stage_p(p_base: u32, i0: u32, k0: u32, idx: u32) {
  let r = idx / TILE_K;
  let kk = idx % TILE_K;
  let ok = i0 + r < params.lq && k0 + kk < params.lk;
  let src = p_base + min(i0 + r, params.lq - 1u) * params.lk + min(k0 + kk, params.lk - 1u);
  p_tile[kk * TILE + r] = select(0.0, p[src], ok);
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let tile = wid.x + wid.y * nwg.x;
  if (tile >= params.tiles) {
    return;
  }
  let bh = tile / params.tiles_per_head;
  let t = tile % params.tiles_per_head;
  let b = bh / params.heads;
  let h = bh % params.heads;
  let i0 = (t / params.tiles_n) * TILE;
  let n0 = (t % params.tiles_n) * TILE;
  let p_base = bh * params.lq * params.lk;
  let v_base = b * params.v_sb + (h * params.kv_heads / params.heads) * params.v_sh;
  let tx = lid.x;
  let ty = lid.y;
  for (var k0 = 0u; k0 < params.lk; k0 += TILE_K) {
    for (var e = 0u; e < TILE_K; e++) {
      stage_p(p_base, i0, k0, li + 64u * e);
      // V[k0 + e, n0 + li]
      let ok = k0 + e < params.lk && n0 + li < params.dv;
      let src = v_base + min(k0 + e, params.lk - 1u) * params.v_sl + min(n0 + li, params.dv - 1u);
      v_tile[e * TILE + li] = select(0.0, v[src], ok);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TILE_K; kk++) {
      let vb = kk * TILE + tx;
      let v_lo = vec4f(v_tile[vb], v_tile[vb + 8u], v_tile[vb + 16u], v_tile[vb + 24u]);
      let v_hi = vec4f(v_tile[vb + 32u], v_tile[vb + 40u], v_tile[vb + 48u], v_tile[vb + 56u]);
      let pb = kk * TILE + ty;
      let p0 = p_tile[pb];
      let p1 = p_tile[pb + 8u];
      let p2 = p_tile[pb + 16u];
      let p3 = p_tile[pb + 24u];
      let p4 = p_tile[pb + 32u];
      let p5 = p_tile[pb + 40u];
      let p6 = p_tile[pb + 48u];
      let p7 = p_tile[pb + 56u];
      tile_fma(p0, p1, p2, p3, p4, p5, p6, p7, v_lo, v_hi);
    }
    workgroupBarrier();
  }
  let o_base = b * params.o_sb + h * params.o_sh;
  for (var a = 0u; a < 8u; a++) {
    let row = i0 + ty + 8u * a;
    if (row >= params.lq) {
      break;
    }
    for (var c = 0u; c < 8u; c++) {
      let col = n0 + tx + 8u * c;
      if (col < params.dv) {
        o[o_base + row * params.o_sl + col] = acc[2u * a + c / 4u][c % 4u];
      }
    }
  }
}
