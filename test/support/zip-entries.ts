import { readFileSync } from 'node:fs';

/** End of central directory record signature (PKWARE APPNOTE 4.3.16). */
const EOCD_SIGNATURE = 0x06054b50;
/** Central directory file header signature (APPNOTE 4.3.12). */
const CENTRAL_SIGNATURE = 0x02014b50;

/**
 * The names of the entries of the zip archive at `path`, in central-directory order, read from its central directory
 * (no decompression, no zip64: the archives `osls package` writes are far below 4 GiB and 65 535 entries).
 * @throws {Error} when no end-of-central-directory record or a malformed central directory is found.
 */
export function zipEntries(path: string): string[] {
  const zip = readFileSync(path);
  let eocd = -1;
  // The record is 22 bytes plus a comment of at most 65 535 bytes, at the very end.
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 65_535); at -= 1) {
    if (zip.readUInt32LE(at) === EOCD_SIGNATURE) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${path}: no end of central directory record`);
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const names: string[] = [];
  for (let i = 0; i < count; i += 1) {
    if (zip.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw new Error(`${path}: malformed central directory entry ${i}`);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    names.push(zip.toString('utf8', at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return names;
}
