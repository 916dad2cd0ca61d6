// Type declarations for CommonJS consumers (`require('attention-lab')`, or a
// TypeScript project compiled to CommonJS). Every type is the one declared in
// index.d.ts (the single source); this file only re-exports it and restates
// the value exports of node.cjs. Needs TypeScript >= 5.3 (import attributes
// on type-only imports).
import type * as api from './index.js' with { 'resolution-mode': 'import' };

export type * from './index.js' with { 'resolution-mode': 'import' };

export declare const init: typeof api.init;
export declare const simdSupported: typeof api.simdSupported;
export declare const DisposedError: typeof api.DisposedError;
export declare const TrainingStoppedError: typeof api.TrainingStoppedError;
export declare const threadsSupported: typeof api.threadsSupported;
