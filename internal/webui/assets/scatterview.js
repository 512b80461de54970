// What the scatter pages share: the ScatterService's answers turned into the
// shapes the REST API gives jobs (package jobjson: snake_case names,
// lower-case state names, numbers as numbers), so the pages read one kind
// of object whichever API it came from; the progress bar; and the badge
// that marks a job as part of a scatter.
import { escapeHtml, isFinal, rpc } from "./util.js";

export const isLive = (state) => state === "running" || state === "gathering";

// enumName turns "SCATTER_STATE_GATHERING" into "gathering". Protobuf's
// JSON leaves zero values out, so an absent state is "unspecified".
function enumName(v, prefix) {
  return String(v || prefix + "UNSPECIFIED").replace(prefix, "").toLowerCase();
}

// num reads an integer field: 64-bit ones come as strings, zero ones not
// at all.
const num = (v) => Number(v || 0);

// seconds reads a google.protobuf.Duration ("1.5s").
const seconds = (d) => (d ? parseFloat(d) : 0);

export function paramsOf(p = {}) {
  const v = {
    argv: p.argv,
    script: p.script,
    env: p.env,
    working_dir: p.workingDir,
    timeout_seconds: seconds(p.timeout),
    repository_url: p.repositoryUrl,
    ref: p.ref,
  };
  if (p.scatter) {
    const m = p.scatter;
    v.scatter = { scatter_id: m.scatterId, batch_index: num(m.batchIndex), batch_count: num(m.batchCount), item_count: num(m.itemCount), gather: !!m.gather };
  }
  return v;
}

// jobOf is a Job message as the REST API shows the job.
export function jobOf(j) {
  const v = {
    job_id: j.jobId,
    queue: j.queue || "",
    state: enumName(j.state, "JOB_STATE_"),
    created_at: j.createdAt,
    updated_at: j.updatedAt,
    attempt: num(j.attempt),
    max_attempts: num(j.maxAttempts),
    cancel_requested: !!j.cancelRequested,
    line_count: num(j.lineCount),
    params: paramsOf(j.params),
  };
  if (j.result) {
    const r = j.result;
    v.result = { exit_code: num(r.exitCode), error: r.error, started_at: r.startedAt, finished_at: r.finishedAt, attempt: num(r.attempt) };
  }
  return v;
}

// scatterOf is a Scatter message with the names of jobjson.Scatter.
export function scatterOf(s) {
  const p = s.progress || {};
  const spec = s.spec || {};
  return {
    scatter_id: s.scatterId,
    state: enumName(s.state, "SCATTER_STATE_"),
    error: s.error || "",
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    gather_job_id: s.gatherJobId || "",
    failed_job_ids: s.failedJobIds || [],
    redrive_count: num(s.redriveCount),
    progress: {
      batch_count: num(p.batchCount),
      waiting: num(p.waiting),
      queued: num(p.queued),
      running: num(p.running),
      succeeded: num(p.succeeded),
      failed: num(p.failed),
      cancelled: num(p.cancelled),
      item_count: num(p.itemCount),
      items_done: num(p.itemsDone),
    },
    spec: {
      queue: spec.queue || "",
      params: paramsOf(spec.params),
      max_attempts: num(spec.maxAttempts),
      retries: num(spec.retries),
      batch_input: spec.batchInput || "{}",
      max_concurrency: num(spec.maxConcurrency),
      // Optional fields: present, even when 0, only if they were set.
      tolerated_failure_count: spec.toleratedFailureCount,
      tolerated_failure_percentage: spec.toleratedFailurePercentage,
      gather: spec.gather ? paramsOf(spec.gather) : null,
      source: spec.source ? sourceOf(spec.source) : null,
      results: spec.results || "",
    },
    reading: s.reading ? { done: !!s.reading.done, items_read: num(s.reading.itemsRead), bytes_read: num(s.reading.bytesRead) } : null,
    result_manifest: s.resultManifest || "",
  };
}

function sourceOf(src) {
  return {
    items: src.items || "",
    items_prefix: src.itemsPrefix || "",
    format: src.format || "",
    max_items_per_batch: num(src.maxItemsPerBatch),
    max_bytes_per_batch: num(src.maxBytesPerBatch),
    group_by: src.groupBy || "",
    max_items_per_group: num(src.maxItemsPerGroup),
  };
}

// readingText says where the server reads a scatter's items and how far it
// has come ("" for a scatter whose client sent its batches).
export function readingText(sc) {
  const src = sc.spec.source;
  if (!src) return "";
  const where = src.items || `the objects under ${src.items_prefix}`;
  const r = sc.reading;
  if (!r) return where;
  if (r.done) return `${where}: all ${r.items_read.toLocaleString()} read`;
  if (isFinal(sc.state)) return `${where}: the reading stopped after ${r.items_read.toLocaleString()} items`;
  return `${where}: reading, ${r.items_read.toLocaleString()} items so far`;
}

export async function getScatter(id) {
  return scatterOf((await rpc("ScatterService/GetScatter", { scatterId: id })).scatter);
}

export async function listScatters(pageSize, cursor) {
  const resp = await rpc("ScatterService/ListScatters", { pageSize, cursor });
  return { scatters: (resp.scatters || []).map(scatterOf), next_cursor: resp.nextCursor || "" };
}

export async function listBatches(id, from, pageSize) {
  const resp = await rpc("ScatterService/ListScatterBatches", { scatterId: id, fromIndex: from, pageSize });
  return {
    batches: (resp.batches || []).map((b) => ({ batch_index: num(b.batchIndex), item_count: num(b.itemCount), job: b.job ? jobOf(b.job) : null })),
    next_index: num(resp.nextIndex),
  };
}

export async function cancelScatter(id, reason) {
  return scatterOf((await rpc("ScatterService/CancelScatter", { scatterId: id, reason })).scatter);
}

// SEGMENTS are the parts of the progress bar, in the order drawn; batches
// still waiting for their turn are the empty rest of the track.
const SEGMENTS = ["succeeded", "failed", "cancelled", "running", "queued"];

export const ended = (p) => p.succeeded + p.failed + p.cancelled;

// progressText says in words what the bar shows, for screen readers and
// tooltips.
export function progressText(p) {
  const parts = SEGMENTS.map((k) => `${p[k].toLocaleString()} ${k}`);
  parts.push(`${p.waiting.toLocaleString()} waiting`);
  return `${ended(p).toLocaleString()} of ${p.batch_count.toLocaleString()} batches ended: ${parts.join(", ")}`;
}

// progressBar is a scatter's batches as a bar: one coloured segment per
// state, each as wide as its share of the batches. It is a progressbar
// whose value is the batches that have ended; label names it.
export function progressBar(p, label, extraClass = "") {
  const n = Math.max(p.batch_count, 1);
  const segs = SEGMENTS.filter((k) => p[k] > 0)
    .map((k) => `<span class="seg ${k}" style="width:${((p[k] * 100) / n).toFixed(3)}%"></span>`)
    .join("");
  const text = escapeHtml(progressText(p));
  return `<div class="progress ${extraClass}" role="progressbar" aria-label="${escapeHtml(label)}" aria-valuemin="0" aria-valuemax="${p.batch_count}"
    aria-valuenow="${ended(p)}" aria-valuetext="${text}" title="${text}">${segs}</div>`;
}

// memberTag is the small link from a job to its scatter: "batch 3/10" (the
// batch index as in the job id, of the batch count) or "gather". Empty for
// jobs of no scatter.
export function memberTag(job) {
  const m = job.params && job.params.scatter;
  if (!m) return "";
  const what = m.gather ? "gather" : `batch ${m.batch_index}/${m.batch_count}`;
  const title = m.gather ? `The gather of scatter ${m.scatter_id}` : `Batch ${m.batch_index} of ${m.batch_count} of scatter ${m.scatter_id}`;
  return `<a class="tag" href="/scatters/${encodeURIComponent(m.scatter_id)}" title="${escapeHtml(title)}">${escapeHtml(what)}</a>`;
}
