// Declarations of web/lib/io/gguf.js (to be merged into web/index.d.ts by the lead).
export type GgmlTypeName = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K' | string;
export interface GgufTensorInfo {
  name: string;
  /** ggml type name, e.g. 'Q4_K' (dtype is the same string). */
  ggmlType: GgmlTypeName;
  dtype: GgmlTypeName;
  /** torch order: ggml's ne reversed. */
  shape: number[];
  /** ggml order (ne[0] is the innermost, contiguous dimension). */
  ne: number[];
  count: number;
  /** absolute byte range in the file: [begin, end). */
  begin: number;
  end: number;
}
export interface GgufHeader {
  version: 2 | 3;
  /** values: number, bigint (64-bit beyond 2^53), boolean, string or (nested) arrays. */
  metadata: Map<string, unknown>;
  /** 'UINT8' … 'FLOAT64', 'STRING', 'ARRAY' per key. */
  metadataTypes: Map<string, string>;
  alignment: number;
  dataOffset: number;
  tensors: GgufTensorInfo[];
}
export interface GgufFile extends GgufHeader {
  bytes(name: string): Uint8Array;
  tensor(name: string): Float32Array;
}
export interface GgufLazyFile extends GgufHeader {
  bytes(name: string): Promise<Uint8Array>;
  tensor(name: string): Promise<Float32Array>;
}
export function parseGgufHeader(bytes: Uint8Array, fileSize?: number, where?: string): GgufHeader;
export function readGguf(source: Uint8Array | ArrayBuffer | ArrayBufferView): GgufFile;
export function openGguf(source: Blob | Uint8Array | ArrayBuffer): Promise<GgufLazyFile | GgufFile>;
export function writeGguf(
  tensors: Record<string, { data: Float32Array; shape: number[]; type?: 'F32' | 'F16' | 'Q8_0' | 'Q4_0' }>,
  metadata?: Record<string, string | number | boolean | bigint | Array<string | number | boolean | bigint>>,
): Uint8Array;
export function dequantizeGgml(where: string, tensor: string, typeName: GgmlTypeName, bytes: Uint8Array, count: number): Float32Array;
export const GGML_TYPES: Readonly<Record<number, { name: string; blockSize: number; typeSize: number }>>;
