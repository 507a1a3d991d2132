// The page's three modes, no build step:
// - Ask: POST /answer with stream: true; each episode's actions, quotes and draft answer
//   as Server-Sent Events arrive, then the answer with [n] linked to its references.
// - Demonstrate: a person drives the policy's own browser through /sessions (search,
//   click link markers, find, scroll, select text to quote, end) and writes the answer;
//   the service stores the demonstration record exactly as shown (service.demonstrating).
// - Compare: two candidates side by side, each rated, and WebGPT's 5-point preference,
//   posted to /feedback as a graded comparison (a soft label for the reward model).
// Page text is data: it is only ever set with textContent, never innerHTML.
"use strict";

const $ = (id) => document.getElementById(id);
const keyInput = $("key");
keyInput.value = localStorage.getItem("webgpt-key") || "";

// -- helpers ------------------------------------------------------------------------

function headers() {
  const result = { "content-type": "application/json" };
  if (keyInput.value) {
    localStorage.setItem("webgpt-key", keyInput.value);
    result.authorization = "Bearer " + keyInput.value;
  }
  return result;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((data.error && data.error.message) || "HTTP " + response.status);
  return data;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function say(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

// An answer's text with each valid [n] a link to reference n (ids prefix + n).
function citedText(answer, count, prefix) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of answer.matchAll(/\[(\d+)\]/g)) {
    const n = Number(match[1]);
    if (n < 1 || n > count) continue;
    fragment.append(answer.slice(last, match.index));
    const link = element("a", match[0], "citation");
    link.href = "#" + prefix + n;
    link.setAttribute("aria-label", "reference " + n);
    fragment.append(link);
    last = match.index + match[0].length;
  }
  fragment.append(answer.slice(last));
  return fragment;
}

// One item per page, in the order the answer first cites it, with each quote taken from it
// under its own [n] (ids prefix + n), so a citation still leads to its own text.
function referenceList(list, references, prefix) {
  list.replaceChildren();
  list.classList.add("by-page");  // numbered by the quotes' [n], not by page
  const pages = new Map();
  for (const reference of references) {
    let item = pages.get(reference.url);
    if (!item) {
      item = element("li");
      const link = element("a", reference.title + " (" + reference.domain + ")");
      link.href = reference.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      item.append(link);
      pages.set(reference.url, item);
      list.append(item);
    }
    const quote = element("blockquote");
    quote.id = prefix + reference.n;
    quote.append(element("span", "[" + reference.n + "] ", "quote-n"), reference.extract);
    item.append(quote);
  }
}

// -- modes --------------------------------------------------------------------------

const tabs = ["ask", "demonstrate", "compare"];

function showMode(mode) {
  for (const name of tabs) {
    const selected = name === mode;
    $("tab-" + name).setAttribute("aria-selected", String(selected));
    $("tab-" + name).tabIndex = selected ? 0 : -1;
    $(name).hidden = !selected;
  }
  say("");
}

for (const name of tabs) {
  $("tab-" + name).addEventListener("click", () => showMode(name));
  $("tab-" + name).addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = tabs[(tabs.indexOf(name) + step + tabs.length) % tabs.length];
    showMode(next);
    $("tab-" + next).focus();
  });
}

// -- Ask ----------------------------------------------------------------------------

let lastResult = null;

function episodeBox(index) {
  let box = $("episode-" + index);
  if (!box) {
    box = element("details", undefined, "episode");
    box.id = "episode-" + index;
    box.open = true;
    const summary = element("summary", "Episode " + (index + 1));
    box.append(summary, element("ol"), element("p", "", "draft"));
    $("episodes").append(box);
  }
  return box;
}

function describe(action) {
  const event = action.event;
  switch (event.type) {
    case "search": return ["Search: " + event.query + " (" + event.results.length + " results)"];
    case "page": return [(event.via === "back" ? "Back to " : "Opened ") + event.title];
    case "quote": return ["Quoted: “" + event.quote.extract + "”", "quote"];
    case "find": return ["Find “" + event.text + "”" + (event.found ? "" : " (not found)")];
    case "scroll": return ["Scrolled to lines " + event.first_line + "–" + event.last_line];
    case "end": return ["Ended: " + event.reason];
    case "invalid_action": return ["Invalid: " + action.command, "invalid"];
    default: return [action.command];
  }
}

function showAnswer(result) {
  const answer = $("answer");
  answer.replaceChildren();
  if (result.answer) answer.append(citedText(result.answer, result.references.length, "ref-"));
  else answer.textContent = "No answer: browsing ended without one.";
  // A decline says the pages found do not answer; it cites nothing, so say so plainly.
  if (result.declined) {
    answer.append(element("p", "Declined: the pages it found do not answer the question.", "muted"));
  }
  referenceList($("references"), result.references, "ref-");
  // Which models made it: the reward model is named when it picked among episodes, the
  // quote ranker when one chose the sentences the policy could quote.
  const versions = result.versions;
  $("result-versions").textContent = (versions.policy ? "policy " + versions.policy : "") +
    (versions.quote_ranker ? " · quotes ranked by " + versions.quote_ranker : "") +
    (versions.reward ? " · picked by reward model " + versions.reward + " among " + result.candidates.length : "");
  $("rate-these").hidden = result.candidates.filter((c) => c.answer).length < 2;
  $("result").hidden = false;
}

function handle(event) {
  if (event.type === "episode_start") episodeBox(event.episode);
  else if (event.type === "action") {
    const [text, className] = describe(event);
    // the parts of the grammar that narrowed what the policy could write at this step
    const narrowed = event.narrowed && event.narrowed.length ? " · narrowed by " + event.narrowed.join(", ") : "";
    episodeBox(event.episode).querySelector("ol").append(element("li", text + narrowed, className));
  } else if (event.type === "shaped") {
    // a part other than the policy's sampling changed the answer (agent.episode.SHAPING_PARTS)
    const text = "Answer changed by " + event.part.replaceAll("_", " ") + (event.detail ? ": " + event.detail : "");
    episodeBox(event.episode).querySelector("ol").append(element("li", text, "shaped"));
  } else if (event.type === "answer_delta") {
    episodeBox(event.episode).querySelector(".draft").textContent += event.text;
  } else if (event.type === "candidate" && event.reward !== null) {
    episodeBox(event.episode).querySelector("summary").textContent += " · reward " + event.reward.toFixed(2);
  } else if (event.type === "episode_error") {
    episodeBox(event.episode).querySelector("ol").append(element("li", "failed: " + event.message, "error"));
  } else if (event.type === "error") {
    say(event.message, true);
  } else if (event.type === "final") {
    say("");
    lastResult = event.result;
    // The trace has done its job: collapse each episode (a click opens it again).
    for (const box of document.querySelectorAll("#episodes details")) {
      const actions = box.querySelectorAll("li").length;
      box.querySelector("summary").textContent += " · " + actions + " actions";
      box.open = false;
    }
    showAnswer(event.result);
  }
}

// POST /answer with stream: true, calling onEvent for each server-sent event.
async function streamAnswer(body, onEvent) {
  const response = await fetch("/answer", {
    method: "POST", headers: headers(), body: JSON.stringify({ ...body, stream: true }),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new Error((data.error && data.error.message) || "HTTP " + response.status);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 2);
      if (!line.startsWith("data: ")) continue;
      const data = line.slice(6);
      if (data === "[DONE]") return;
      onEvent(JSON.parse(data));
    }
  }
}

$("ask-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  $("episodes").replaceChildren();
  $("result").hidden = true;
  say("Browsing…");
  $("submit").disabled = true;
  try {
    await streamAnswer({ question: $("question").value, n: Number($("n").value) }, handle);
  } catch (error) {
    say(error.message, true);
  } finally {
    $("submit").disabled = false;
  }
});

$("rate-these").addEventListener("click", () => {
  showMode("compare");
  showRating(lastResult);
});

// -- Demonstrate ----------------------------------------------------------------------

let demo = null;  // the open session's state (SessionState)
let selectedText = "";  // the last selection inside the page text: what "Quote" sends

const LINK_MARKER = /【(\d+)†([^†】]*)(?:†([^】]*))?】/g;

// One line of page text with its link markers as links that click them.
function pageLine(line) {
  const node = element("div", undefined, "line");
  let last = 0;
  for (const match of line.matchAll(LINK_MARKER)) {
    node.append(line.slice(last, match.index));
    const link = element("a", match[2], "link");
    link.href = "#";
    link.dataset.link = match[1];
    if (match[3]) link.dataset.domain = match[3];
    link.title = "Clicked on link " + match[1] + (match[3] ? " (" + match[3] + ")" : "");
    node.append(link);
    last = match.index + match[0].length;
  }
  node.append(line.slice(last));
  if (!node.textContent) node.append("\u00a0");  // keep blank lines visible
  return node;
}

function eventMessage(event) {
  if (!event) return "";
  switch (event.type) {
    case "invalid_action": return "Not done: " + event.reason;
    case "quote": return "Quoted (" + event.total_chars + " characters in all).";
    case "find": return event.found ? "" : "“" + event.text + "” is not on the rest of the page.";
    case "search": return event.error ? "Search failed: " + event.error : event.results.length + " results.";
    default: return "";
  }
}

function renderDemo(state) {
  demo = state;
  selectedText = "";
  $("demo-start").hidden = true;
  $("demo-browser").hidden = false;
  $("demo-heading").textContent = state.question;
  $("demo-title").textContent = state.title || "Blank page: search to begin";
  $("demo-where").textContent = state.url
    ? state.url + " · lines " + state.first_line + "–" + state.last_line + " of " + state.total_lines
    : "";
  $("demo-text").replaceChildren(...state.lines.map(pageLine));
  $("demo-left").textContent = String(state.actions_left);
  const quotes = $("demo-quotes");
  quotes.replaceChildren();
  for (const quote of state.quotes) {
    const item = element("li");
    item.append(element("span", quote.title + " (" + quote.domain + ")", "muted"), element("blockquote", quote.extract));
    quotes.append(item);
  }
  $("demo-actions").replaceChildren(...state.past_actions.map((a) => element("li", a)));
  for (const control of document.querySelectorAll("#demo-browser .toolbar button, #demo-browser .toolbar input, #demo-browser aside .row button")) {
    control.disabled = state.done;
  }
  $("demo-answer").hidden = !state.done;
  if (state.done) showAnswerEditor(state);
  say(state.done ? "Browsing ended (" + state.end_reason + ")." : eventMessage(state.event));
}

function showAnswerEditor(state) {
  const refused = state.end_reason === "nonsense" || state.end_reason === "controversial";
  const cite = $("demo-cite");
  cite.replaceChildren();
  state.quotes.forEach((quote, index) => {
    const button = element("button", "Cite [" + (index + 1) + "] " + quote.title);
    button.type = "button";
    button.addEventListener("click", () => {
      const box = $("demo-answer-text");
      box.setRangeText("[" + (index + 1) + "]", box.selectionStart, box.selectionEnd, "end");
      box.focus();
    });
    cite.append(button);
  });
  $("demo-answer-text").hidden = refused;
  $("demo-answer-text").required = !refused;
  $("demo-answer").querySelector("button[type=submit]").textContent =
    refused ? "Submit (no answer: " + state.end_reason + ")" : "Submit demonstration";
  if (!refused) $("demo-answer-text").focus();
}

async function demoStep(command) {
  if (!demo || demo.done) return;
  try {
    renderDemo(await api("POST", "/sessions/" + demo.id + "/step", { command }));
  } catch (error) {
    say(error.message, true);
  }
}

function resetDemo(message) {
  demo = null;
  $("demo-browser").hidden = true;
  $("demo-answer").hidden = true;
  $("demo-answer-text").value = "";
  $("demo-start").hidden = false;
  say(message || "");
}

async function startDemo(body) {
  try {
    renderDemo(await api("POST", "/sessions", body));
    $("demo-query").focus();
  } catch (error) {
    say(error.message, true);
  }
}

$("demo-start").addEventListener("submit", (submit) => {
  submit.preventDefault();
  const question = $("demo-question").value.trim();
  if (!question) return say("Type a question, or take the next one from the queue.", true);
  startDemo({ question });
});
$("demo-next").addEventListener("click", () => startDemo({ from_queue: true }));
$("demo-search").addEventListener("submit", (submit) => {
  submit.preventDefault();
  const query = $("demo-query").value.trim();
  if (query) demoStep("Search " + query);
});
$("demo-find").addEventListener("submit", (submit) => {
  submit.preventDefault();
  const text = $("demo-find-text").value.trim();
  if (text) demoStep("Find in page: " + text);
});
for (const button of document.querySelectorAll("#demo-browser button[data-command]")) {
  button.addEventListener("click", () => demoStep(button.dataset.command));
}
$("demo-text").addEventListener("click", (click) => {
  const link = click.target.closest("a.link");
  if (!link) return;
  click.preventDefault();
  demoStep("Clicked on link " + link.dataset.link);
});
document.addEventListener("selectionchange", () => {
  const selection = document.getSelection();
  if (selection && selection.rangeCount && $("demo-text").contains(selection.anchorNode)) {
    selectedText = selection.toString().replace(/\s+/g, " ").trim();
  }
});

// The quote command for a selection: the text itself, or for a long one the `start━end`
// form of Table 1 (its first and last words), as the policy writes long quotes.
function quoteCommand(text) {
  if (text.length <= 400) return "Quote: " + text;
  const words = text.split(" ");
  return "Quote: " + words.slice(0, 8).join(" ") + "━" + words.slice(-8).join(" ");
}

$("demo-quote").addEventListener("click", () => {
  if (!selectedText) return say("Select a passage of the page text first.", true);
  demoStep(quoteCommand(selectedText));
});
$("demo-abandon").addEventListener("click", async () => {
  if (!demo) return;
  try {
    await api("DELETE", "/sessions/" + demo.id);
    resetDemo("Abandoned: nothing was stored.");
  } catch (error) {
    resetDemo(error.message);
  }
});
$("demo-answer").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const refused = demo.end_reason === "nonsense" || demo.end_reason === "controversial";
  const body = refused ? {} : { answer: $("demo-answer-text").value };
  try {
    const receipt = await api("POST", "/sessions/" + demo.id + "/answer", body);
    resetDemo("Thank you: demonstration " + receipt.id + " was recorded.");
  } catch (error) {
    say(error.message, true);
  }
});

// -- Compare --------------------------------------------------------------------------

let rated = null;  // { result, a, b }: the answer and the candidate indexes shown as A and B

const RATINGS = [
  ["supported", "Claims supported by its quotes"],
  ["coherent", "Coherent"],
  ["useful", "Useful"],
];

function candidateView(side, result, index) {
  const candidate = result.candidates[index];
  const article = $("candidate-" + side);
  article.dataset.candidate = String(index);
  article.replaceChildren(element("h3", "Answer " + side.toUpperCase()));
  const text = element("p", undefined, "answer");
  text.append(citedText(candidate.answer, candidate.references.length, side + "-ref-"));
  const references = element("ol", undefined, "references");
  referenceList(references, candidate.references, side + "-ref-");
  const versions = result.versions;
  const made = "policy " + versions.policy + " · reward model " + (versions.reward || "none") +
    (candidate.reward !== null ? " · score " + candidate.reward.toFixed(2) : "");
  article.append(text, references, element("p", made, "muted versions"));
  for (const [name, label] of RATINGS) {
    const group = element("fieldset", undefined, "rating");
    group.append(element("legend", label));
    for (const value of ["yes", "partly", "no"]) {
      const choice = element("label");
      const input = element("input");
      input.type = "radio";
      input.name = side + "-" + name;
      input.value = value;
      choice.append(input, " " + value);
      group.append(choice);
    }
    article.append(group);
  }
}

function showRating(result) {
  const answered = result.candidates.map((c, i) => i).filter((i) => result.candidates[i].answer);
  if (answered.length < 2) return say("Fewer than two answers came back: ask again.", true);
  // Which candidate is A is random, so position cannot bias the ratings (as in WebGPT).
  const [a, b] = Math.random() < 0.5 ? [answered[0], answered[1]] : [answered[1], answered[0]];
  rated = { result, a, b };
  $("rating-question").textContent = result.question;
  candidateView("a", result, a);
  candidateView("b", result, b);
  $("rating").reset();
  $("rating").hidden = false;
}

function ratingsOf(side) {
  const ratings = {};
  for (const [name] of RATINGS) {
    const checked = document.querySelector("input[name=" + side + "-" + name + "]:checked");
    if (checked) ratings[name] = checked.value;
  }
  return ratings;
}

$("compare-form").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  $("rating").hidden = true;
  say("Browsing twice…");
  let result = null;
  try {
    await streamAnswer({ question: $("compare-question").value, n: 2 }, (event) => {
      if (event.type === "final") result = event.result;
      else if (event.type === "error") throw new Error(event.message);
    });
    say("");
    if (result) showRating(result);
  } catch (error) {
    say(error.message, true);
  }
});

$("rating").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  const grade = document.querySelector("input[name=grade]:checked");
  if (!grade) return say("Choose an overall preference (A much better … B much better).", true);
  try {
    await api("POST", "/feedback", {
      kind: "graded", answer_id: rated.result.id, a: rated.a, b: rated.b, grade: grade.value,
      ratings_a: ratingsOf("a"), ratings_b: ratingsOf("b"), note: $("rating-note").value || null,
    });
    $("rating").hidden = true;
    say("Thank you: your comparison was recorded.");
  } catch (error) {
    say(error.message, true);
  }
});

// -- keyboard -------------------------------------------------------------------------

const DEMO_KEYS = { b: "Back", t: "Top", j: "Scrolled down 1", k: "Scrolled up 1", e: "End: Answer" };

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = event.target.closest("input[type=text], input[type=search], input[type=password], input[type=number], textarea");
  if (typing) return;
  const mode = tabs.find((name) => !$(name).hidden);
  if (event.key === "/") {
    event.preventDefault();
    ({ ask: $("question"), demonstrate: demo ? $("demo-query") : $("demo-question"), compare: $("compare-question") })[mode].focus();
  } else if (mode === "demonstrate" && demo && !demo.done) {
    if (DEMO_KEYS[event.key]) demoStep(DEMO_KEYS[event.key]);
    else if (event.key === "f") { event.preventDefault(); $("demo-find-text").focus(); }
    else if (event.key === "q") $("demo-quote").click();
  } else if (mode === "compare" && !$("rating").hidden && "12345".includes(event.key)) {
    document.querySelectorAll("input[name=grade]")[Number(event.key) - 1].checked = true;
  }
});
