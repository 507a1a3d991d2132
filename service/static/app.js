// The live browsing trace: POST /answer with stream: true, read the Server-Sent Events,
// show each episode's actions, quotes and draft answer as they happen, then the answer
// with its references and, with two or more candidates, a comparison for /feedback.
"use strict";

const $ = (id) => document.getElementById(id);
const keyInput = $("key");
keyInput.value = localStorage.getItem("webgpt-key") || "";

function headers() {
  const result = { "content-type": "application/json" };
  if (keyInput.value) {
    localStorage.setItem("webgpt-key", keyInput.value);
    result.authorization = "Bearer " + keyInput.value;
  }
  return result;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;  // page text is data: never innerHTML
  if (className) node.className = className;
  return node;
}

function episodeBox(index) {
  let box = document.getElementById("episode-" + index);
  if (!box) {
    box = element("div", undefined, "episode");
    box.id = "episode-" + index;
    box.append(element("h3", "Episode " + (index + 1)), element("ol"), element("p", "", "draft"));
    $("episodes").append(box);
  }
  return box;
}

function describe(action) {
  const event = action.event;
  switch (event.type) {
    case "search": return ["Search: " + event.query + " (" + event.results.length + " results)"];
    case "page": return [(event.via === "back" ? "Back to " : "Opened ") + event.title];
    case "quote": return event.quote ? ["Quoted: “" + event.quote.extract + "”", "quote"] : ["Quote not found"];
    case "find": return ["Find “" + event.text + "”" + (event.found ? "" : " (not found)")];
    case "scroll": return ["Scrolled to lines " + event.first_line + "–" + event.last_line];
    case "end": return ["Ended: " + event.reason];
    case "invalid_action": return ["Invalid: " + action.command, "invalid"];
    default: return [action.command];
  }
}

function showAnswer(result) {
  $("answer").textContent = result.answer || "No answer: browsing ended without one.";
  const list = $("references");
  list.replaceChildren();
  for (const reference of result.references) {
    const item = element("li");
    const link = element("a", reference.title + " (" + reference.domain + ")");
    link.href = reference.url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    item.append(link, element("blockquote", reference.extract));
    list.append(item);
  }
  $("result").hidden = false;
}

function showComparison(result) {
  const answered = result.candidates.filter((c) => c.answer);
  if (answered.length < 2) return;
  const [a, b] = answered;
  $("candidate-a").textContent = a.answer;
  $("candidate-b").textContent = b.answer;
  $("compare").hidden = false;
  $("thanks").textContent = "";
  for (const button of document.querySelectorAll("#compare button")) {
    button.onclick = async () => {
      const choice = button.dataset.choice;
      const [better, worse] = choice === "b" ? [b.episode, a.episode] : [a.episode, b.episode];
      const response = await fetch("/feedback", {
        method: "POST", headers: headers(),
        body: JSON.stringify({ answer_id: result.id, better, worse, tie: choice === "tie" }),
      });
      $("thanks").textContent = response.ok ? "Thank you: your comparison was recorded."
                                            : "Could not record it (" + response.status + ").";
    };
  }
}

function handle(event) {
  if (event.type === "episode_start") episodeBox(event.episode);
  else if (event.type === "action") {
    const [text, className] = describe(event);
    episodeBox(event.episode).querySelector("ol").append(element("li", text, className));
  } else if (event.type === "answer_delta") {
    episodeBox(event.episode).querySelector(".draft").textContent += event.text;
  } else if (event.type === "candidate" && event.reward !== null) {
    episodeBox(event.episode).querySelector("h3").textContent += " · reward " + event.reward.toFixed(2);
  } else if (event.type === "episode_error") {
    episodeBox(event.episode).querySelector("ol").append(element("li", "failed: " + event.message, "error"));
  } else if (event.type === "error") {
    $("status").textContent = event.message;
    $("status").className = "error";
  } else if (event.type === "final") {
    $("status").textContent = "";
    showAnswer(event.result);
    showComparison(event.result);
  }
}

$("ask").addEventListener("submit", async (submit) => {
  submit.preventDefault();
  $("episodes").replaceChildren();
  $("result").hidden = true;
  $("compare").hidden = true;
  $("status").className = "";
  $("status").textContent = "Browsing…";
  $("submit").disabled = true;
  try {
    const response = await fetch("/answer", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ question: $("question").value, n: Number($("n").value), stream: true }),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error((body.error && body.error.message) || "HTTP " + response.status);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 2);
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        handle(JSON.parse(data));
      }
    }
  } catch (error) {
    $("status").textContent = error.message;
    $("status").className = "error";
  } finally {
    $("submit").disabled = false;
  }
});
