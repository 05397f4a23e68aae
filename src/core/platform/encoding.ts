/** Encodings both platforms need, without Node's Buffer (not in browsers). */

/** The UTF-8 bytes of `text`, base64 (as `Buffer.from(text, "utf8").toString("base64")`). */
export function utf8ToBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  // (in chunks: String.fromCharCode takes its arguments on the stack)
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}
