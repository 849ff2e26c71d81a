/*! onceform: solves the form's ALTCHA proof of work before it is posted. No dependencies. */
(function () {
  "use strict";
  var input = document.querySelector("input[data-challenge]");
  if (!input || !window.crypto || !crypto.subtle) { return; }
  var form = input.form, text = new TextEncoder(), solved = false;
  function hex(b) {
    return Array.prototype.map.call(new Uint8Array(b), function (x) { return (x + 256).toString(16).slice(1); }).join("");
  }
  function solve(c) {
    function from(n) {
      var batch = [];
      for (var i = n; i <= c.maxnumber && i < n + 500; i++) {
        batch.push(crypto.subtle.digest("SHA-256", text.encode(c.salt + i)));
      }
      if (!batch.length) { return Promise.reject(new Error("unsolvable challenge")); }
      return Promise.all(batch).then(function (hashes) {
        for (var j = 0; j < hashes.length; j++) { if (hex(hashes[j]) === c.challenge) { return n + j; } }
        return from(n + batch.length);
      });
    }
    return from(0).then(function (number) {
      return btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: number,
        salt: c.salt, signature: c.signature }));
    });
  }
  form.addEventListener("submit", function (event) {
    if (solved) { return; }
    event.preventDefault();
    var button = form.querySelector("[type=submit]"), status = form.querySelector(".altcha-status");
    if (button) { button.disabled = true; }
    if (status) { status.textContent = input.getAttribute("data-checking") || ""; }
    fetch(input.getAttribute("data-challenge"), { credentials: "omit" })
      .then(function (r) { return r.json(); })
      .then(solve)
      .then(function (answer) { input.value = answer; })
      .catch(function () { /* posted without an answer: kept for review */ })
      .then(function () { solved = true; form.submit(); });
  });
})();
