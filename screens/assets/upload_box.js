// perfledger's upload box: the chosen file is sent with one PUT to the upload route, which writes it to disk as
// it arrives; the route's answer (the upload's id) becomes this box's state, read by the page.
const MIB = 1048576;
// The upload's id is offered as the box's state until the page says it took it (data.taken): a state change made
// while the page's first run on a freshly started server was still going asked for a rerun that never came (3 of 3
// tries), and the file was ignored. Each offer differs (`offer`), so each asks for a rerun.
const OFFER_EVERY_MS = 1500;
const MOST_OFFERS = 40;

function sized(bytes) {
  return bytes >= MIB ? `${(bytes / MIB).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

export default function (component) {
  const { parentElement, data, setStateValue } = component;
  const root = parentElement;
  root.perfledgerSet = setStateValue;  // the latest render's, for offers made from a timer
  const input = root.querySelector("input[type=file]");
  const drop = root.querySelector(".drop");
  const status = root.querySelector(".status");
  const clear = root.querySelector(".clear");
  root.querySelector(".label").textContent = data.label;
  input.accept = data.accept || "";

  const say = (text, kind) => {
    status.textContent = text;
    status.dataset.kind = kind || "";
  };
  const held = (file) => {
    clear.hidden = !file;
    if (file) say(`${file.name} · ${sized(file.size)}`, "held");
  };

  const stopOffering = () => {
    clearTimeout(root.perfledgerOffer);
    root.perfledgerPending = null;
  };
  const offer = (answer) => {
    stopOffering();
    root.perfledgerPending = answer.upload;
    let offers = 0;
    const again = () => {
      if (root.perfledgerPending !== answer.upload || offers >= MOST_OFFERS) return;
      offers += 1;
      root.perfledgerSet("file", { ...answer, offer: offers });
      root.perfledgerOffer = setTimeout(again, OFFER_EVERY_MS);
    };
    again();
  };
  if (data.taken && data.taken === root.perfledgerPending) stopOffering();

  // A refusal is the page's to say (one sentence, where every other error is said), not the box's.
  const refused = (sentence) => {
    stopOffering();
    held(null);
    say("", "");
    setStateValue("file", { error: sentence });
  };

  const send = (file) => {
    if (file.size > data.most_bytes) {  // more than any file within the limit can have as sent
      refused(`${file.name}: larger than the ${data.limit_text} limit; nothing was sent.`);
      return;
    }
    const request = new XMLHttpRequest();
    request.open("PUT", data.url);
    request.setRequestHeader("X-Upload-Name", encodeURIComponent(file.name));
    request.upload.onprogress = (e) => {
      if (e.lengthComputable) say(`Uploading ${file.name}: ${Math.floor((100 * e.loaded) / e.total)}%`, "busy");
    };
    request.onload = () => {
      let answer = {};
      try {
        answer = JSON.parse(request.responseText);
      } catch (_) {
        answer = {};
      }
      if (request.status === 200 && answer.upload) {
        held(answer);
        offer(answer);
      } else {
        refused(answer.error || `${file.name}: the server refused the upload (HTTP ${request.status}).`);
      }
    };
    request.onerror = () => refused(`${file.name}: the upload was interrupted; choose the file again.`);
    say(`Uploading ${file.name}…`, "busy");
    request.send(file);
  };

  input.onchange = () => {
    if (input.files.length) send(input.files[0]);
    input.value = "";
  };
  drop.ondragover = (e) => {
    e.preventDefault();
    drop.dataset.over = "1";
  };
  drop.ondragleave = () => {
    drop.dataset.over = "";
  };
  drop.ondrop = (e) => {
    e.preventDefault();
    drop.dataset.over = "";
    if (e.dataTransfer.files.length) send(e.dataTransfer.files[0]);
  };
  clear.onclick = () => {
    stopOffering();
    held(null);
    say("", "");
    setStateValue("file", null);
  };
  if (data.current) held(data.current);
  else if (status.dataset.kind === "held") {
    held(null);
    say("", "");
  }
}
