// The page: UI only. The model lives in worker.js so generation never blocks it.
const $ = (id) => document.getElementById(id);
const worker = new Worker('worker.js', { type: 'module' });
let messages = [];     // the conversation sent to model.chat()
let current = null;    // { el, text } of the assistant reply being streamed

function setBusy(generating) {
  $('send').disabled = generating;
  $('prompt').disabled = generating;
  $('stop').disabled = !generating;
  $('clear').disabled = generating;
}

function addMessage(role, text) {
  const el = document.createElement('div');
  el.className = `msg ${role}`;
  el.textContent = text;
  $('log').append(el);
  el.scrollIntoView({ block: 'end' });
  return el;
}

function load(source) {
  $('terms').hidden = !/gemma/i.test(source.url || source.file?.name || '');
  $('progress').hidden = false;
  $('status').textContent = 'Loading…';
  $('send').disabled = true;
  $('prompt').disabled = true;
  worker.postMessage({ type: 'load', backend: $('backend').value, ...source });
}

worker.onmessage = ({ data: m }) => {
  if (m.type === 'progress') {
    $('bar').value = m.fraction;
    const mb = (n) => (n / 1e6).toFixed(1);
    const bytes = m.detail && m.detail.total ? ` (${mb(m.detail.loaded)} of ${mb(m.detail.total)} MB)` : '';
    $('stage').textContent = `${m.stage} ${(m.fraction * 100).toFixed(0)}%${bytes}`;
  } else if (m.type === 'loaded') {
    const i = m.info;
    $('progress').hidden = true;
    const adapter = i.adapter ? ` on ${i.adapter.name || 'an unnamed adapter'}${i.adapter.software ? ' (software)' : ''}` : '';
    $('status').textContent = `${i.name || i.architecture} · ${(i.parameters / 1e6).toFixed(0)}M params · ${i.quantization} · ` +
      `backend: ${i.backend}${adapter} · context ${i.contextLength}`;
    $('status').dataset.backend = i.backend;
    if (i.fallbackReason) {
      $('notice').hidden = false;
      $('notice').textContent = `Running on the CPU: ${i.fallbackReason}.`;
    } else {
      $('notice').hidden = true;
    }
    messages = [];
    $('log').replaceChildren();
    setBusy(false);
    $('prompt').focus();
    const c = Array.isArray(m.cache) ? m.cache[0] : m.cache;
    if (c && c.status === 'hit') $('status').textContent += ' · from the cache';
    if (c && c.error) { $('notice').hidden = false; $('notice').textContent = `Not cached: ${c.error}`; }
  } else if (m.type === 'cache') {
    // The models this origin keeps: a next visit loads them without downloading.
    const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
    $('cached-total').textContent = m.entries.length
      ? `${m.entries.length}, ${mb(m.entries.reduce((a, e) => a + e.bytes, 0))}` : 'none';
    $('cached-list').replaceChildren(...m.entries.map((e) => {
      const li = document.createElement('li');
      const del = document.createElement('button');
      del.textContent = 'Delete';
      del.onclick = () => worker.postMessage({ type: 'cache-delete', url: e.url });
      li.append(`${e.url.replace(/^.*\//, '')}: ${mb(e.bytes)}${e.complete ? '' : ` of ${mb(e.length)} (resumes on the next load)`} `, del);
      return li;
    }));
  } else if (m.type === 'token') {
    current.text += m.piece;
    current.el.textContent = current.text;
    current.el.scrollIntoView({ block: 'end' });
  } else if (m.type === 'done') {
    messages.push({ role: 'assistant', content: current.text });
    if (m.aborted) current.el.dataset.stopped = 'true';
    if (m.stats) {
      const s = m.stats;
      $('speed').textContent = `prefill ${s.prefillTokS.toFixed(1)} tok/s (${s.promptTokens - s.cachedTokens} new tokens, ${s.cachedTokens} from the cache) · ` +
        `decode ${s.decodeTokS.toFixed(1)} tok/s (${s.generatedTokens} tokens) · stop: ${s.stopReason}` +
        // JSON mode: the grammar's share of the decode time.
        (s.grammarMs === undefined ? '' :
          ` · grammar ${s.grammarMs.toFixed(1)} ms (${(100 * s.grammarMs / Math.max(s.decodeMs, 1e-9)).toFixed(1)}% of decode)`);
    } else {
      $('speed').textContent = 'stopped';
    }
    current = null;
    setBusy(false);
  } else if (m.type === 'error') {
    $('progress').hidden = true;
    addMessage('error', m.message);
    $('status').textContent = $('status').textContent === 'Loading…' ? 'No model loaded.' : $('status').textContent;
    if (current) { current = null; setBusy(false); }
  }
};

$('source').onsubmit = (e) => { e.preventDefault(); load({ url: $('url').value }); };
// The models scripts/setup.sh fetched (served from .cache by scripts/serve.mjs).
$('model').onchange = () => {
  $('url').value = $('model').value;
  load({ url: $('url').value });
};
$('file').onchange = () => { if ($('file').files[0]) load({ file: $('file').files[0] }); };
$('prompt-form').onsubmit = (e) => {
  e.preventDefault();
  const text = $('prompt').value.trim();
  if (!text) return;
  let json = null;
  if ($('json-mode').checked) {
    const src = $('schema').value.trim();
    try {
      json = { schema: src ? JSON.parse(src) : null };
    } catch (err) {
      addMessage('error', `The schema is not JSON: ${err.message}`);
      return;
    }
  }
  $('prompt').value = '';
  messages.push({ role: 'user', content: text });
  addMessage('user', text);
  current = { el: addMessage('assistant', ''), text: '' };
  setBusy(true);
  worker.postMessage({ type: 'chat', messages, json, options: { maxTokens: 256, temperature: 0.2 } });
};
$('prompt').onkeydown = (e) => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('prompt-form').requestSubmit(); }
};
$('stop').onclick = () => worker.postMessage({ type: 'stop' });
$('clear').onclick = () => { messages = []; $('log').replaceChildren(); worker.postMessage({ type: 'reset' }); };

if (!navigator.gpu) {
  $('notice').hidden = false;
  $('notice').textContent = 'This browser has no WebGPU (navigator.gpu is missing): the model will run on the CPU.';
}
load({ url: $('url').value });
