// What the wrapper's type check (tests/types/tsconfig.lib.json) sees of
// web/lib/io: lab.js spreads IO_API onto the lab object. The io modules
// themselves are excluded from that check until their JSDoc passes it; the
// public types of these functions are in web/index.d.ts.
export declare const IO_API: Readonly<Record<string, (...args: any[]) => any>>;
/** Bodies of AttentionModule.loadStateDict / stateDict (web/lib/io/state-dict.js). */
export declare function loadStateDict(module: object, tensors: unknown, options: unknown, ctx: { where: string; layer?: boolean }): any;
export declare function moduleStateDict(module: object, options: unknown, ctx: { where: string; layer?: boolean }): Record<string, { data: Float32Array; shape: number[] }>;
