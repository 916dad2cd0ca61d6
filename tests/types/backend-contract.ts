// The backend interface's contract, checked by `npm run typecheck`
// (tsconfig.lib.json): a bag with a misnamed or missing field, a misnamed
// output field or an op the table (web/lib/ops.js OpTypes) does not declare
// fails the type check. Each @ts-expect-error below must stay an error: if
// Backend.op loosened to `any`, tsc would report the unused directive.
import type { Backend } from '../../web/lib/backend.js';

declare const backend: Backend;

backend.op('alibiSlopes', { heads: 4 }, { out: 4 });
backend.op('rotaryCache', { maxPosition: 4, rotaryDim: 4, base: 10000 }, { cos: 8, sin: 8 });
backend.op('rmsNorm', { rows: 2, dim: 3, x: new Float32Array(6), weight: null, eps: 1e-5 }, { y: 6 });

// @ts-expect-error a misnamed bag field (heads)
backend.op('alibiSlopes', { head: 4 }, { out: 4 });
// @ts-expect-error a missing bag field (eps)
backend.op('rmsNorm', { rows: 2, dim: 3, x: new Float32Array(6), weight: null }, { y: 6 });
// @ts-expect-error a misnamed output field (out)
backend.op('alibiSlopes', { heads: 4 }, { outs: 4 });
// @ts-expect-error an op the table does not declare
backend.op('noSuchOp', {}, {});
// @ts-expect-error a bag field of the wrong kind (x is a Float32Array)
backend.op('rmsNorm', { rows: 2, dim: 3, x: [1, 2, 3], weight: null, eps: 1e-5 }, { y: 6 });

// The named methods are checked the same way.
declare const mask: Parameters<Backend['sdpa']>[0]['mask'];
backend.sdpa({
  where: 'sdpa', batch: 1, heads: 1, lq: 1, lk: 1, d: 1, dv: 1, q: new Float32Array(1), k: new Float32Array(1),
  v: new Float32Array(1), scale: undefined, mask, needWeights: false, trace: false,
  // @ts-expect-error a misnamed field of SdpaArgs
  needWeight: true,
});
