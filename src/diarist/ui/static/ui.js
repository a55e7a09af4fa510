// The inspector's only script: the upload form sends its file with a progress bar. Without
// script the form posts as usual; the server does the same work either way.
"use strict";
for (const form of document.querySelectorAll("form[data-upload]")) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const bar = form.querySelector("progress");
    const text = form.querySelector(".progress-text");
    const button = form.querySelector("button[type=submit]");
    const request = new XMLHttpRequest();
    request.open("POST", form.action);
    bar.hidden = false;
    button.disabled = true;
    request.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) {
        bar.value = Math.round((100 * e.loaded) / e.total);
        text.textContent = bar.value < 100 ? `sending ${bar.value}%` : "reading and indexing…";
      }
    });
    request.addEventListener("load", () => {
      if (request.status < 400) {
        window.location.assign(request.responseURL);
        return;
      }
      const page = new DOMParser().parseFromString(request.responseText, "text/html");
      const error = page.querySelector("#error");
      text.textContent = `import failed (${request.status}): ${error ? error.textContent : request.statusText}`;
      text.classList.add("error");
      button.disabled = false;
    });
    request.addEventListener("error", () => {
      text.textContent = "import failed: the connection was lost";
      button.disabled = false;
    });
    request.send(new FormData(form));
  });
}
