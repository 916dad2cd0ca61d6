// Tile and workgroup sizes, in one place: kernels paste this file in with
// `// #include tiles`, and scripts/embed-wgsl.mjs exports the same constants
// to the host (WGSL_CONSTANTS in web/lib/wgsl-sources.js), which sizes its
// dispatches with them (web/lib/webgpu-ops.js). The register-tile code
// (register_tile.wgsl) is written for 8×8 invocations with 8×8 outputs each,
// i.e. TILE = 64.
const TILE = 64u;     // rows (and columns or keys) of a workgroup's output tile
const TILE_K = 16u;   // k steps staged in workgroup memory per barrier
const WG_1D = 256u;   // invocations per workgroup of the one-element-per-invocation kernels
