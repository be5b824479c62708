// The page's words in English and Chinese; elements carry data-i18n keys so a switch relabels them in place.
import { el } from "./render.js";

const WORDS = {
  en: {
    skip: "Skip to the message box", threads: "Threads", token: "Token", other_language: "中文",
    new_thread: "New thread", welcome_title: "Describe an operator",
    welcome_text: "Write what the kernel should compute, with shapes and dtypes, in English or Chinese, or paste PyTorch code or a task book. KernelGen shows how it understood you before it runs anything.",
    message_label: "Message", placeholder: "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]",
    attach: "Attach or drop .md / .py", send: "Send", hint: "Enter sends, Shift+Enter starts a new line.",
    token_title: "API token", save: "Save", close: "Close",
    token_text: "This server needs a token. It is kept in this tab only (session storage), and sent in a header, never in a link.",
    you: "You", understood: "Understood as", start: "Start", edit: "Edit", started: "Started as job {job}",
    inputs: "Inputs", name: "name", dtype: "dtype", shape: "shape", output: "Output", params: "Parameters",
    device: "device", target: "target", rounds: "rounds", changed: "Changed", derived: "Derived from job {job}",
    question: "A question before anything runs", answer_hint: "Answer below: your reply completes the spec.",
    tasks: "Task book", task: "task", status: "status", reading: "reading", start_all: "Start every read task as a batch", batch: "Batch {batch}", report: "Report", stage: "stage",
    job: "Job {job}", cancel: "Cancel", elapsed: "elapsed", round_of: "round {k} of {n}",
    stage_queued: "queued", stage_requirements: "requirements", stage_definition: "definition",
    stage_generate: "generate", stage_accuracy: "accuracy", stage_performance: "performance",
    stage_profile: "profile", stage_log: "log", stage_diagnose: "diagnose", stage_classify: "classify",
    stage_edit: "edit", stage_search: "search", stage_repair: "repair", stage_finalize: "finalize",
    stage_resume: "resume", stage_restart: "restart",
    status_queued: "queued", status_running: "running", status_verified: "verified", status_failed: "failed",
    status_rejected: "rejected", status_cancelled: "cancelled",
    results: "Results", rounds_table: "Rounds", round: "round", edit_type: "edit", config: "configuration",
    accuracy: "accuracy", x_eager: "× eager", x_compile: "× torch.compile", pct_roofline: "% roofline",
    kept: "kept", best: "best", verdict: "verdict", definition: "Definition", log: "Optimization log",
    changes: "Changes between rounds", no_changes: "No round changed the files.",
    copy: "Copy", copied: "Copied", download: "Download", download_zip: "Download all (zip)",
    chart_speedup: "Speedup per round", chart_roofline: "Roofline", speedup: "speedup",
    chart_empty: "Not measured: no accelerator ran this job.", intensity: "arithmetic intensity (FLOP/byte)",
    tflops: "TFLOP/s", need_token: "This server needs a token.", error: "Error", loading: "Loading…",
    round_first: "first version, then up to {n} optimization rounds", round_cpu: "first version only (CPU)",
    cpu_only: "Runs on the CPU through the Triton interpreter: accuracy only. Nothing is timed here and no optimization round runs.",
    asked_device: "The spec asks for {asked}, but this server has none.", runs_on_accelerator: "Runs and is timed on {name}.",
    file_kind: "{name}: only a .md, .py or .txt file can be sent.", open_job: "Open", close_job: "Close",
    delete_thread: "Delete the thread {title}", delete_confirm: "Delete?",
    sent_file: "File {name}", task_read: "read", task_question: "question", empty_thread: "(new thread)", reconnecting: "Connection lost; resuming…",
    reading_now: "Reading your message…", reading_hint: "A code spec or a file is traced in the sandbox first: this takes a few seconds.",
    seconds: "{s} s", minutes: "{m} min {s} s", retry: "Send again", sign_in: "Sign in again",
    busy: "The service is busy: every sandbox is in use. Your message was not sent and is kept; send it again in {s} s.",
    busy_over: "The service was busy. Your message was not sent and is kept; send it again now.",
    too_slow: "Reading the message took longer than the service waits. Its reply may still be recorded: open the thread again later. The message is kept in the box.",
    token_refused: "This token was refused (revoked or wrong). Sign in again with a valid token.",
    revoked: "Access was revoked: this token no longer admits this job, so its progress is not shown. Sign in again to follow it.",
    revoked_batch: "Access was revoked: this token no longer admits this batch. Sign in again to follow it.",
    job_missing: "This job no longer exists.", not_used: "not used:", op: "op", eta: "about {s} s left",
    ridge: "ridge", of_roofline: "of roofline", progress: "progress",
    device_auto: "auto", device_cpu: "CPU", device_cuda: "CUDA", device_npu: "NPU",
    edit_initial: "initial", edit_parameter: "parameter", edit_interface: "interface", edit_logic: "logic",
    acc_pass: "pass", acc_fail: "fail", acc_error: "error", acc_timeout: "timeout", "acc_not run": "not run",
  },
  zh: {
    skip: "跳到输入框", threads: "对话", token: "令牌", other_language: "English",
    new_thread: "新对话", welcome_title: "描述一个算子",
    welcome_text: "用中文或英文写出内核要计算什么、形状和数据类型，或粘贴 PyTorch 代码、任务书。KernelGen 会先展示它的理解，再开始运行。",
    message_label: "消息", placeholder: "例如：对形状为 [1024, 1024] 的 float16 张量 x 做 ReLU",
    attach: "附加或拖入 .md / .py 文件", send: "发送", hint: "Enter 发送，Shift+Enter 换行。",
    token_title: "API 令牌", save: "保存", close: "关闭",
    token_text: "此服务器需要令牌。令牌只保存在本标签页（session storage），通过请求头发送，不会出现在链接里。",
    you: "你", understood: "理解为", start: "开始", edit: "修改", started: "已启动为任务 {job}",
    inputs: "输入", name: "名称", dtype: "数据类型", shape: "形状", output: "输出", params: "参数",
    device: "设备", target: "目标", rounds: "轮数", changed: "改动", derived: "由任务 {job} 派生",
    question: "运行前需要确认的问题", answer_hint: "请在下方回答：你的回复会补全需求。",
    tasks: "任务书", task: "任务", status: "状态", reading: "理解", start_all: "将所有已理解的任务作为批次启动", batch: "批次 {batch}", report: "报告", stage: "阶段",
    job: "任务 {job}", cancel: "取消", elapsed: "已用时", round_of: "第 {k} 轮，共 {n} 轮",
    stage_queued: "排队", stage_requirements: "需求解析", stage_definition: "算子定义",
    stage_generate: "代码生成", stage_accuracy: "精度测试", stage_performance: "性能测试",
    stage_profile: "性能剖析", stage_log: "优化记录", stage_diagnose: "诊断", stage_classify: "修改分类",
    stage_edit: "修改", stage_search: "配置搜索", stage_repair: "修复", stage_finalize: "完成",
    stage_resume: "恢复", stage_restart: "重启",
    status_queued: "排队中", status_running: "运行中", status_verified: "已验证", status_failed: "失败",
    status_rejected: "已拒绝", status_cancelled: "已取消",
    results: "结果", rounds_table: "各轮结果", round: "轮次", edit_type: "修改类型", config: "配置",
    accuracy: "精度", x_eager: "相对 eager", x_compile: "相对 torch.compile", pct_roofline: "屋顶线 %",
    kept: "保留", best: "最佳", verdict: "结论", definition: "算子定义文档", log: "优化日志",
    changes: "各轮之间的改动", no_changes: "没有一轮改动文件。",
    copy: "复制", copied: "已复制", download: "下载", download_zip: "全部下载（zip）",
    chart_speedup: "各轮加速比", chart_roofline: "屋顶线模型", speedup: "加速比",
    chart_empty: "未测量：本任务没有在加速器上运行。", intensity: "算术强度（FLOP/字节）",
    tflops: "TFLOP/s", need_token: "此服务器需要令牌。", error: "错误", loading: "加载中…",
    round_first: "初始版本，之后最多 {n} 轮优化", round_cpu: "仅初始版本（CPU）",
    cpu_only: "在 CPU 上通过 Triton 解释器运行：只测精度。这里不计时，也不做优化轮次。",
    asked_device: "需求指定了 {asked}，但此服务器没有。", runs_on_accelerator: "在 {name} 上运行并计时。",
    file_kind: "{name}：只能发送 .md、.py 或 .txt 文件。", open_job: "打开", close_job: "收起",
    delete_thread: "删除对话 {title}", delete_confirm: "删除？",
    sent_file: "文件 {name}", task_read: "已理解", task_question: "有疑问", empty_thread: "（新对话）", reconnecting: "连接中断，正在恢复…",
    reading_now: "正在理解你的消息…", reading_hint: "代码需求或文件要先在沙箱中追踪运行，需要几秒钟。",
    seconds: "{s} 秒", minutes: "{m} 分 {s} 秒", retry: "重新发送", sign_in: "重新登录",
    busy: "服务繁忙：所有沙箱都在使用中。消息未发送，已为你保留；请在 {s} 秒后重新发送。",
    busy_over: "服务刚才繁忙。消息未发送，已为你保留；现在可以重新发送。",
    too_slow: "理解这条消息的用时超过了服务的等待时间。回复可能稍后仍会记录：请稍后重新打开这个对话。消息已保留在输入框中。",
    token_refused: "令牌被拒绝（已撤销或有误）。请用有效的令牌重新登录。",
    revoked: "访问已被撤销：此令牌不能再查看这个任务，进度不再显示。请重新登录以继续查看。",
    revoked_batch: "访问已被撤销：此令牌不能再查看这个批次。请重新登录以继续查看。",
    job_missing: "该任务已不存在。", not_used: "未使用：", op: "算子", eta: "预计还需 {s} 秒",
    ridge: "拐点", of_roofline: "屋顶线占比", progress: "进度",
    device_auto: "自动", device_cpu: "CPU", device_cuda: "CUDA", device_npu: "NPU",
    edit_initial: "初始版本", edit_parameter: "参数", edit_interface: "接口", edit_logic: "逻辑",
    acc_pass: "通过", acc_fail: "未通过", acc_error: "出错", acc_timeout: "超时", "acc_not run": "未运行",
  },
};

let current = localStorage.getItem("kg-lang") === "zh" ? "zh" : "en";

/** Return the current language code. */
export function lang() {
  return current;
}

/** Translate a key, filling {name} slots from vars. */
export function t(key, vars = {}) {
  const text = WORDS[current][key] ?? WORDS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(vars[name] ?? ""));
}

/** A value the service names (a device, an edit type, a stage) in the page's words when the page knows it, else as
 * it came (marked as a name, not a word of the page). */
export function tv(prefix, value) {
  const key = `${prefix}_${value}`;
  return key in WORDS.en ? tx("span", key) : el("span", { translate: "no" }, String(value ?? ""));
}

/** A duration as "5 s" / "1 min 5 s" (relabelled when the language switches). */
export function duration(totalSeconds) {
  const seconds = Math.max(0, Math.round(totalSeconds));
  return seconds >= 60 ? tx("span", "minutes", { m: Math.floor(seconds / 60), s: seconds % 60 })
    : tx("span", "seconds", { s: seconds });
}

/** A <time> of a date in the page's language: the time of day, or date and time (reformatted on a switch). */
export function timeEl(date, style = "time") {
  const node = el("time", { datetime: date.toISOString(), "data-time-style": style });
  node.textContent = formatTime(date, style);
  return node;
}

function formatTime(date, style) {
  const locale = current === "zh" ? "zh-CN" : "en";
  return style === "time" ? date.toLocaleTimeString(locale)
    : date.toLocaleString(locale, { dateStyle: "medium", timeStyle: "short" });
}

/** Relabel every element under root that carries a data-i18n key (text, placeholder, aria-label), and its times. */
export function applyI18n(root = document) {
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
  for (const node of root.querySelectorAll("time[data-time-style]")) {
    node.textContent = formatTime(new Date(node.getAttribute("datetime")), node.dataset.timeStyle);
  }
  for (const node of root.querySelectorAll("[data-i18n]")) {
    const vars = node.dataset.i18nVars ? JSON.parse(node.dataset.i18nVars) : {};
    node.textContent = t(node.dataset.i18n, vars);
  }
  for (const node of root.querySelectorAll("[data-i18n-placeholder]")) {
    node.placeholder = t(node.dataset.i18nPlaceholder);
  }
  for (const node of root.querySelectorAll("[data-i18n-aria]")) {
    node.setAttribute("aria-label", t(node.dataset.i18nAria));
  }
}

/** Switch the language, remember it, and relabel the page. */
export function setLang(code) {
  current = code === "zh" ? "zh" : "en";
  localStorage.setItem("kg-lang", current);
  applyI18n(document);
  document.dispatchEvent(new CustomEvent("kg-lang")); // what is drawn with words, not keys (charts), draws again
}

/** Create an element whose text is the translation of key (relabelled when the language switches). */
export function tx(tag, key, vars = {}, attrs = {}) {
  const marks = { "data-i18n": key };
  if (Object.keys(vars).length) marks["data-i18n-vars"] = JSON.stringify(vars);
  const node = el(tag, { ...attrs, ...marks });
  node.textContent = t(key, vars);
  return node;
}
