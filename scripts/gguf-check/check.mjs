// Reads a GGUF file with Hugging Face's @huggingface/gguf (an implementation independent of jquant's) and
// prints what it found as JSON: version, metadata (arrays as their length and first elements), tensor table.
// Usage: node check.mjs FILE.gguf
// Exit codes: 0 parsed; 1 the parser refused the file (its message on stderr); 2 usage.
import { gguf } from "@huggingface/gguf";
import path from "node:path";

if (process.argv.length !== 3) {
  console.error("usage: node check.mjs FILE.gguf");
  process.exit(2);
}
const file = path.resolve(process.argv[2]);
try {
  const { metadata, tensorInfos, tensorDataOffset } = await gguf(file, { allowLocalFile: true });
  const shown = {};
  for (const [key, value] of Object.entries(metadata)) {
    shown[key] = Array.isArray(value) ? { length: value.length, first: value.slice(0, 3).map(String) } : String(value);
  }
  const tensors = tensorInfos.map((t) => ({
    name: t.name,
    dims: t.shape.map(Number),
    type: t.dtype,
    offset: Number(t.offset),
  }));
  console.log(JSON.stringify({ version: metadata.version, dataOffset: Number(tensorDataOffset), metadata: shown, tensors }));
} catch (e) {
  console.error(`${file}: ${e.message}`);
  process.exit(1);
}
