// The Teams app icons, drawn here so the package needs no image files or tools: a 192×192 colour
// icon (a white speech bubble on the accent colour) and a 32×32 outline icon (white on transparent),
// the two sizes Teams requires. Encoded as RGBA PNGs with node:zlib.
import { crc32, deflateSync } from 'node:zlib';

type Rgba = [number, number, number, number];

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

export function encodePng(size: number, pixel: (x: number, y: number) => Rgba): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, no interlace
  const rows = Buffer.alloc(size * (1 + size * 4));
  for (let y = 0; y < size; y++) {
    const row = y * (1 + size * 4);
    for (let x = 0; x < size; x++) rows.set(pixel(x, y), row + 1 + x * 4);
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

/** A rounded speech bubble with a tail, in a unit square (0..1). */
function inBubble(u: number, v: number): boolean {
  const [left, right, top, bottom, r] = [0.18, 0.82, 0.22, 0.66, 0.12];
  const cx = Math.min(Math.max(u, left + r), right - r);
  const cy = Math.min(Math.max(v, top + r), bottom - r);
  const inBody = u >= left && u <= right && v >= top && v <= bottom && (u - cx) ** 2 + (v - cy) ** 2 <= r * r;
  const inTail = v > bottom - 0.01 && v < 0.82 && u > 0.3 && u < 0.3 + (0.82 - v) * 0.9;
  return inBody || inTail;
}

export function colorIcon(accent: Rgba): Buffer {
  return encodePng(192, (x, y) => (inBubble((x + 0.5) / 192, (y + 0.5) / 192) ? [255, 255, 255, 255] : accent));
}

export function outlineIcon(): Buffer {
  return encodePng(32, (x, y) => (inBubble((x + 0.5) / 32, (y + 0.5) / 32) ? [255, 255, 255, 255] : [0, 0, 0, 0]));
}
