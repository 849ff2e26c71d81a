/*! onceform embed: <form data-onceform="https://forms.example.com/f/contact"> on any page
 * submits through onceform's JSON API, exactly once per fill. No dependencies. MIT. */
(function () {
  "use strict";
  var store = window.sessionStorage;
  var RETRIES = 4;
  /* The messages in each locale the form offers and its default locale, filled in by onceform
   * when it serves this script (/embed.js?form=NAME: that form's locales; else all). */
  var MESSAGES = /*ONCEFORM_MESSAGES*/{};
  var DEFAULT_LOCALE = /*ONCEFORM_LOCALE*/"en";

  /* A locale of MESSAGES for a language tag (the form's data-onceform-lang or the page's lang). */
  function pick(tag) {
    var t = String(tag || "").toLowerCase(), have = Object.keys(MESSAGES), i;
    if (!t) { return null; }
    for (i = 0; i < have.length; i++) { if (have[i].toLowerCase() === t) { return have[i]; } }
    if (/^zh-(hant|tw|hk|mo)(-|$)/.test(t)) { return MESSAGES["zh-TW"] ? "zh-TW" : null; }
    if (/^zh-(hans|cn|sg)(-|$)/.test(t)) { return MESSAGES["zh-CN"] ? "zh-CN" : null; }
    for (i = 0; i < have.length; i++) { if (have[i].split("-")[0].toLowerCase() === t.split("-")[0]) { return have[i]; } }
    return null;
  }

  function get(key) { try { return store.getItem(key); } catch (e) { return null; } }
  function put(key, value) { try { store.setItem(key, value); } catch (e) { /* private mode */ } }
  function drop(key) { try { store.removeItem(key); } catch (e) { /* private mode */ } }

  function uuid() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    var b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join("");
  }

  /* One journey ID per browser session, sent with every submission. */
  function journey() {
    var j = get("onceform:journey");
    if (!j) { j = uuid(); put("onceform:journey", j); }
    return j;
  }

  /* "OF-XXXXX-XXXXX", as onceform's receipt page shows it. */
  function reference(submissionId) {
    var hex = String(submissionId).replace(/[^0-9a-fA-F]/g, "");
    var tail = hex.slice(Math.max(0, hex.length - 10));
    var half = Math.floor(tail.length / 2);
    return ("OF-" + tail.slice(0, half) + "-" + tail.slice(half)).toUpperCase();
  }

  function hex(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (x) { return (x + 256).toString(16).slice(1); }).join("");
  }

  /* ALTCHA proof of work: the number whose SHA-256 with the salt is the challenge. */
  function solve(c) {
    var text = new TextEncoder();
    function from(n) {
      var batch = [];
      for (var i = n; i <= c.maxnumber && i < n + 500; i++) {
        batch.push(crypto.subtle.digest("SHA-256", text.encode(c.salt + i)));
      }
      if (!batch.length) { return Promise.reject(new Error("unsolvable challenge")); }
      return Promise.all(batch).then(function (hashes) {
        for (var j = 0; j < hashes.length; j++) {
          if (hex(hashes[j]) === c.challenge) { return n + j; }
        }
        return from(n + batch.length);
      });
    }
    return from(0).then(function (number) {
      return btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: number,
        salt: c.salt, signature: c.signature }));
    });
  }

  function sleep(ms) { return new Promise(function (ok) { setTimeout(ok, ms); }); }

  function Embed(form) {
    var target = new URL(form.getAttribute("data-onceform"), window.location.href);
    var name = target.pathname.replace(/\/+$/, "").split("/").pop();
    this.form = form;
    var page = form.closest ? form.closest("[lang]") : null;
    this.locale = pick(form.getAttribute("data-onceform-lang")) || pick(page && page.getAttribute("lang")) ||
      DEFAULT_LOCALE;
    this.api = target.origin + "/api/forms/" + encodeURIComponent(name);
    this.key = "onceform:" + target.origin + ":" + name + ":" + window.location.pathname;
    this.status = document.createElement("div");
    this.status.className = "onceform-status";
    this.status.setAttribute("role", "status");
    this.status.setAttribute("aria-live", "polite");
    form.appendChild(this.status);
    this.restore();
    form.addEventListener("input", this.save.bind(this));
    form.addEventListener("submit", this.submit.bind(this));
  }

  /* The fill's values survive a reload (with its operation ID), until it is accepted. */
  Embed.prototype.values = function () {
    var out = {};
    new FormData(this.form).forEach(function (v, k) {
      if (typeof v === "string" && k !== "operation_id") { out[k] = v; }
    });
    return out;
  };
  Embed.prototype.save = function () { put(this.key + ":values", JSON.stringify(this.values())); };
  Embed.prototype.restore = function () {
    var saved = get(this.key + ":values");
    if (!saved) { return; }
    var values = JSON.parse(saved), form = this.form;
    Object.keys(values).forEach(function (k) {
      var el = form.elements.namedItem(k);
      if (el && el.type !== "hidden" && "value" in el) { el.value = values[k]; }
    });
  };

  /* One operation ID per fill: kept across retries and reloads, renewed after success. */
  Embed.prototype.operation = function () {
    var op = get(this.key + ":op");
    if (op) { return Promise.resolve(op); }
    var self = this;
    return fetch(this.api + "/operations", { method: "POST", mode: "cors", credentials: "omit" })
      .then(function (r) { return r.ok ? r.json() : {}; })
      .catch(function () { return {}; })
      .then(function (body) {
        var fresh = get(self.key + ":op") || body.operation_id || uuid();
        put(self.key + ":op", fresh);
        return fresh;
      });
  };
  /* With data-onceform-captcha="altcha": one solved challenge per operation ID, kept with it. */
  Embed.prototype.captcha = function (op) {
    if (this.form.getAttribute("data-onceform-captcha") !== "altcha") { return Promise.resolve(null); }
    var key = this.key + ":altcha:" + op, saved = get(key);
    if (saved) { return Promise.resolve(saved); }
    this.say(this.t("embed-checking"));
    return fetch(this.api + "/altcha", { mode: "cors", credentials: "omit" })
      .then(function (r) { return r.json(); })
      .then(solve)
      .then(function (payload) { put(key, payload); return payload; });
  };

  Embed.prototype.renew = function () {
    var op = get(this.key + ":op");
    if (op) { drop(this.key + ":altcha:" + op); drop(this.key + ":uploads:" + op); }
    drop(this.key + ":op");
  };

  /* Each chosen file ([field, File]) is uploaded once per operation ID and the submission
   * names its upl_ ID: a retry, or Send again, uploads nothing twice. Resolves with nothing
   * once `values` names every upload, else with the refused one's {r, json, field}. */
  Embed.prototype.upload = function (op, files, values) {
    var self = this, key = this.key + ":uploads:" + op, ids = JSON.parse(get(key) || "{}");
    return files.reduce(function (done, item) {
      return done.then(function (refused) {
        var field = item[0], file = item[1], id = field + ":" + [file.name, file.size, file.lastModified].join("/");
        var add = function (u) { (values[field] = values[field] || []).push(u); ids[id] = u; put(key, JSON.stringify(ids)); };
        if (refused || ids[id]) { return refused || add(ids[id]); }
        return self.post(file, 0).then(function (r) {
          return r.json().catch(function () { return {}; }).then(function (json) {
            return r.status === 201 && json.upload_id ? add(json.upload_id) : { r: r, json: json, field: field };
          });
        });
      });
    }, Promise.resolve());
  };
  /* One file's bytes; network errors are retried (the store keeps one copy of a content). */
  Embed.prototype.post = function (file, attempt) {
    var self = this;
    return fetch(this.api + "/uploads", { method: "POST", mode: "cors", credentials: "omit", body: file,
      headers: { "Content-Type": file.type || "application/octet-stream", "Onceform-File-Name": encodeURIComponent(file.name) }
    }).catch(function (error) {
      if (attempt + 1 >= RETRIES) { throw error; }
      self.say(self.t("embed-retrying"));
      return sleep(1000 * Math.pow(2, attempt)).then(function () { return self.post(file, attempt + 1); });
    });
  };
  /* A 422 names these fields: their uploads are forgotten (expired, or the wrong file). */
  Embed.prototype.forget = function (op, fields) {
    var key = this.key + ":uploads:" + op, ids = JSON.parse(get(key) || "{}");
    Object.keys(ids).forEach(function (id) { if (fields.indexOf(id.split(":")[0]) >= 0) { delete ids[id]; } });
    put(key, JSON.stringify(ids));
  };

  /* The message `key` in this form's locale; {seconds} filled in. */
  Embed.prototype.t = function (key, seconds) {
    var m = (MESSAGES[this.locale] || {})[key] || (MESSAGES[DEFAULT_LOCALE] || {})[key] || key;
    return m.replace("{seconds}", String(seconds));
  };

  Embed.prototype.say = function (text, kind) {
    this.status.textContent = text;
    this.status.className = "onceform-status" + (kind ? " onceform-" + kind : "");
  };

  Embed.prototype.clearErrors = function () {
    Array.prototype.forEach.call(this.form.querySelectorAll(".onceform-error"), function (e) {
      e.parentNode.removeChild(e);
    });
    Array.prototype.forEach.call(this.form.querySelectorAll("[aria-invalid]"), function (e) {
      e.removeAttribute("aria-invalid");
    });
  };

  /* 422: each message under its field; messages about unknown names in the status line. */
  Embed.prototype.showErrors = function (errors) {
    var form = this.form, loose = [], first = null;
    Object.keys(errors || {}).forEach(function (field) {
      var el = form.elements.namedItem(field);
      var text = errors[field].join(", ");
      if (!el || !el.parentNode || el.type === "hidden") { loose.push(text); return; }
      if (el.length && !el.tagName) { el = el[0]; }
      var p = document.createElement("p");
      p.className = "onceform-error";
      p.id = "onceform-error-" + field;
      p.textContent = text;
      el.setAttribute("aria-invalid", "true");
      el.setAttribute("aria-describedby", p.id);
      el.parentNode.insertBefore(p, el.nextSibling);
      first = first || el;
    });
    this.say(this.t("embed-errors") + (loose.length ? " " + loose.join(" ") : ""), "error");
    if (first && first.focus) { first.focus(); }
  };

  Embed.prototype.receipt = function (body) {
    var box = document.createElement("div");
    box.className = "onceform-receipt";
    box.setAttribute("role", "status");
    var h = document.createElement("p");
    h.textContent = this.t("embed-thanks");
    var r = document.createElement("p");
    r.textContent = this.t("embed-reference") + " ";
    var code = document.createElement("strong");
    code.className = "onceform-reference";
    code.textContent = reference(body.submission_id);
    r.appendChild(code);
    box.appendChild(h);
    box.appendChild(r);
    this.renew();
    drop(this.key + ":values");
    this.form.reset();
    this.form.style.display = "none";
    this.form.parentNode.insertBefore(box, this.form.nextSibling);
  };

  Embed.prototype.submit = function (event) {
    event.preventDefault();
    if (this.busy) { return; }
    var self = this, button = this.form.querySelector("[type=submit]");
    this.busy = true;
    if (button) { button.disabled = true; }
    this.clearErrors();
    this.say(this.t("embed-sending"));
    var values = this.values(), files = [];
    new FormData(this.form).forEach(function (v, k) { if (typeof v !== "string" && v.size) { files.push([k, v]); } });
    this.operation()
      .then(function (op) {
        return self.captcha(op).then(function (answer) {
          if (answer) { values.altcha = answer; }
          self.say(self.t("embed-sending"));
          return self.upload(op, files, values);
        }).then(function (u) {
          if (!u) { return self.send(op, JSON.stringify(values), 0); }
          if (u.r.status !== 413 && u.r.status !== 400) { return self.answer(u.r, u.json, op, "", RETRIES); }
          var errors = {};
          errors[u.field] = [u.r.status === 413 ? self.t("embed-file-too-large") : u.json.detail || self.t("embed-failed")];
          self.showErrors(errors);
        });
      })
      .catch(function () {
        self.say(self.t("embed-unreachable"), "error");
      })
      .then(function () {
        self.busy = false;
        if (button) { button.disabled = false; }
      });
  };

  /* Sends with the same key until an answer arrives; network errors are retried. */
  Embed.prototype.send = function (op, body, attempt) {
    var self = this;
    return fetch(this.api + "/submissions", {
      method: "POST",
      mode: "cors",
      credentials: "omit",
      headers: { "Content-Type": "application/json", "Idempotency-Key": op, "Onceform-Journey-Id": journey(),
        "Accept-Language": this.locale },
      body: body
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (json) { return self.answer(r, json, op, body, attempt); });
    }, function (error) {
      if (attempt + 1 >= RETRIES) { throw error; }
      self.say(self.t("embed-retrying"));
      return sleep(1000 * Math.pow(2, attempt)).then(function () { return self.send(op, body, attempt + 1); });
    });
  };

  Embed.prototype.answer = function (r, json, op, body, attempt) {
    var wait = parseInt(r.headers.get("Retry-After") || "5", 10);
    var type = String(json.type || "").split("/").pop();
    if (r.status === 201 || r.status === 200) { return this.receipt(json); }
    if (r.status === 422) { this.forget(op, Object.keys(json.errors || {})); return this.showErrors(json.errors); }
    if (r.status === 409 && type === "operation-in-progress" && attempt + 1 < RETRIES) {
      var self = this;
      return sleep(1000 * Math.min(wait, 10)).then(function () { return self.send(op, body, attempt + 1); });
    }
    if (r.status === 409) {
      this.renew();
      return this.say(this.t("embed-conflict"), "error");
    }
    if (r.status === 429) {
      return this.say(this.t("embed-rate-limited", wait), "error");
    }
    if (r.status === 503) {
      return this.say(this.t("embed-unavailable", wait), "error");
    }
    if (r.status === 403) {
      return this.say(this.t("embed-forbidden"), "error");
    }
    this.say(this.t("embed-failed"), "error");
  };

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("form[data-onceform]"), function (f) {
      if (!f.onceform) { f.onceform = new Embed(f); }
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();
