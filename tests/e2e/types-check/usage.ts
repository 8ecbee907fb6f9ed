// Compiled with `tsc --noEmit` against the built package's .d.ts: the
// documented API must type-check as a user would write it.
import init, { WasmModel, type GenerateResult, type ChatMessage, type ModelInfo, type OpenAIFetch } from 'webgguf';
import OpenAI from 'openai';

// The in-process OpenAI endpoint as the `openai` client's fetch.
export async function openai(model: WasmModel): Promise<string | null> {
  const fetch: OpenAIFetch = model.openaiFetch;
  const client = new OpenAI({ apiKey: 'unused', baseURL: 'http://webgguf.local/v1', fetch, dangerouslyAllowBrowser: true });
  const r = await client.chat.completions.create({
    model: 'local', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 16,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' }, strict: true } },
  });
  for await (const chunk of await client.chat.completions.create({ model: 'local', messages: [{ role: 'user', content: 'Hi' }], stream: true })) {
    console.log(chunk.choices[0]?.delta.content);
  }
  return r.choices[0].message.content;
}

export async function demo(bytes: Uint8Array): Promise<string> {
  await init();
  const model: WasmModel = await WasmModel.new(bytes, {
    backend: 'auto',
    contextLength: 1024,
    onProgress: (fraction: number, stage: string) => console.log(stage, fraction),
  });
  const backend: 'webgpu' | 'cpu' = model.backend;
  const why: string | undefined = model.fallbackReason;
  const info: ModelInfo = model.info;
  console.log(backend, why, info.quantization, info.adapter?.limits.maxBufferSize);

  const controller = new AbortController();
  const r: GenerateResult = await model.generate('Once upon a time', {
    maxTokens: 32, temperature: 0, topK: 40, topP: 0.9, minP: 0.05, repeatPenalty: 1.1, seed: 1,
    stop: ['\n\n'], onToken: (piece: string, id: number) => console.log(piece, id), signal: controller.signal,
  });
  const ids: number[] = r.tokens;
  console.log(ids.length, r.stats.decodeTokS, r.stats.stopReason, r.stats.cachedTokens);

  let text = '';
  for await (const piece of model.stream('Hello', { maxTokens: 8 })) text += piece;

  const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
  const prompt: string = model.applyChatTemplate(messages, true);
  const reply = await model.chat(messages, { maxTokens: 16 });
  const back: string = model.detokenize(model.tokenize(prompt));
  model.reset();
  model.free();
  return text + reply.text + back;
}

// The other sources, with download progress in bytes and an abortable load.
export async function sources(file: File, stream: ReadableStream<Uint8Array>): Promise<void> {
  const controller = new AbortController();
  const onProgress = (fraction: number, stage: string, detail: { loaded: number; total: number }) =>
    console.log(stage, fraction, detail.loaded, detail.total);
  for (const source of ['/models/a.gguf', new URL('https://example.com/b.gguf'), file, stream, new ArrayBuffer(8)]) {
    const m = await WasmModel.new(source, { onProgress, signal: controller.signal, connections: 4 });
    m.free();
  }
}
