// Loaded once into the patch context. Bare V8 has no network, file or process access; this adds only
// pure helpers. __VCLUSTER__ is replaced with {name, namespace, config} as JSON before loading.
(function (global) {
  "use strict";
  var B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  function btoa(input) {
    var s = String(input), out = "";
    for (var i = 0; i < s.length; i += 3) {
      var a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
      if (a > 255 || b > 255 || c > 255) throw new Error("btoa: the string contains characters outside Latin1");
      var n = (a << 16) | ((b || 0) << 8) | (c || 0);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] +
        (i + 1 < s.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? B64[n & 63] : "=");
    }
    return out;
  }

  function atob(input) {
    var s = String(input).replace(/[\s=]+/g, ""), out = "", bits = 0, acc = 0;
    for (var i = 0; i < s.length; i++) {
      var v = B64.indexOf(s[i]);
      if (v < 0) throw new Error("atob: invalid base64 character " + JSON.stringify(s[i]));
      acc = (acc << 6) | v; bits += 6;
      if (bits >= 8) { bits -= 8; out += String.fromCharCode((acc >> bits) & 255); }
    }
    return out;
  }

  function utf8(s) { return unescape(encodeURIComponent(s)); }

  function sha256hex(message) {
    var K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2];
    var H = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    var bytes = utf8(message), l = bytes.length, words = [];
    for (var i = 0; i < l; i++) words[i >> 2] |= bytes.charCodeAt(i) << (24 - (i % 4) * 8);
    words[l >> 2] |= 0x80 << (24 - (l % 4) * 8);
    words[(((l + 8) >> 6) << 4) + 15] = l * 8;
    for (var j = 0; j < words.length; j++) words[j] = words[j] | 0;
    function rotr(x, n) { return (x >>> n) | (x << (32 - n)); }
    var W = new Array(64);
    for (var blk = 0; blk < words.length; blk += 16) {
      var a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
      for (var t = 0; t < 64; t++) {
        if (t < 16) W[t] = words[blk + t] | 0;
        else {
          var s0 = rotr(W[t - 15], 7) ^ rotr(W[t - 15], 18) ^ (W[t - 15] >>> 3);
          var s1 = rotr(W[t - 2], 17) ^ rotr(W[t - 2], 19) ^ (W[t - 2] >>> 10);
          W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
        }
        var S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25), ch = (e & f) ^ (~e & g);
        var t1 = (h + S1 + ch + K[t] + W[t]) | 0;
        var S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22), maj = (a & b) ^ (a & c) ^ (b & c);
        var t2 = (S0 + maj) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      H = [(H[0] + a) | 0, (H[1] + b) | 0, (H[2] + c) | 0, (H[3] + d) | 0,
        (H[4] + e) | 0, (H[5] + f) | 0, (H[6] + g) | 0, (H[7] + h) | 0];
    }
    return H.map(function (x) { return ("00000000" + (x >>> 0).toString(16)).slice(-8); }).join("");
  }

  var VCLUSTER = __VCLUSTER__;

  // vcluster's translate.SafeConcatName
  function safeConcatName(parts) {
    var full = parts.join("-");
    if (full.length > 63) return (full.slice(0, 52) + "-" + sha256hex(full).slice(0, 10)).split(".-").join("-");
    return full;
  }

  // "<service>.<namespace>[.svc[.cluster.local]]" in the virtual cluster -> the name of the service vcluster
  // syncs to the host in single-namespace mode: "<service>-x-<namespace>-x-<vcluster>.<host namespace>.svc.cluster.local".
  function virtualToHostDNS(name) {
    var parts = String(name).replace(/\.$/, "").split(".");
    if (parts.length < 2) throw new Error("virtualToHostDNS: expected <service>.<namespace>[.svc[.cluster.local]], got " +
      JSON.stringify(name));
    return safeConcatName([parts[0], "x", parts[1], "x", VCLUSTER.name]) + "." + VCLUSTER.namespace + ".svc.cluster.local";
  }

  function deepFreeze(o) {
    if (o && typeof o === "object" && !Object.isFrozen(o)) {
      Object.freeze(o);
      Object.getOwnPropertyNames(o).forEach(function (k) { deepFreeze(o[k]); });
    }
    return o;
  }

  // A result must be JSON data: null/undefined (delete), a boolean, a string, a finite number that is exact
  // (an integer beyond 2^53 - 1 is not), an array or a plain object of such values. Anything else (a
  // Promise from an async function or import(), a function, a symbol, a BigInt, a Map, a Date, a cyclic
  // object) would be written as something else ({} or nothing) by JSON.stringify: refuse it instead.
  function NotJSONError(message) { this.message = message; }
  NotJSONError.prototype = Object.create(Error.prototype);
  NotJSONError.prototype.name = "NotJSONError";

  function describe(v) {
    if (typeof v === "function") return "a function";
    if (typeof v === "symbol") return "a symbol";
    if (typeof v === "bigint") return "a BigInt";
    if (typeof v === "number") return "the non-finite number " + String(v);
    if (typeof Promise !== "undefined" && v instanceof Promise) return "a Promise (patch expressions run synchronously: an async function or import() cannot be used)";
    if (v && typeof v.then === "function") return "a thenable (an asynchronous result)";
    var name = v && v.constructor && v.constructor.name;
    return "an object of type " + (name || "unknown");
  }

  var MAX_DEPTH = 100;

  function checkResult(v, where, seen) {
    var t = typeof v;
    if (v === null || v === undefined || t === "boolean" || t === "string") return;
    if (t === "number") {
      if (!isFinite(v)) throw new NotJSONError("the result at " + where + " is not JSON data: " + describe(v));
      if (Number.isInteger(v) && Math.abs(v) > Number.MAX_SAFE_INTEGER)
        throw new RangeError("the result at " + where + " holds an integer beyond 2^53 - 1 that JavaScript cannot represent exactly");
      return;
    }
    var proto = t === "object" ? Object.getPrototypeOf(v) : undefined;
    var isArray = Array.isArray(v);
    if (t !== "object" || (!isArray && proto !== Object.prototype && proto !== null))
      throw new NotJSONError("the result at " + where + " is not JSON data: " + describe(v));
    if (seen.indexOf(v) >= 0) throw new NotJSONError("the result at " + where + " is not JSON data: a cyclic object");
    if (seen.length >= MAX_DEPTH)  // the syncer's JSON decoder (and any reader of the object) recurses per level
      throw new NotJSONError("the result at " + where + " nests deeper than " + MAX_DEPTH + " levels");
    seen.push(v);
    if (isArray) {
      for (var i = 0; i < v.length; i++) {
        if (v[i] === undefined) throw new NotJSONError("the result at " + where + "[" + i + "] is not JSON data: undefined in an array");
        checkResult(v[i], where + "[" + i + "]", seen);
      }
    } else {
      Object.keys(v).forEach(function (k) { checkResult(v[k], where + "." + k, seen); });
    }
    seen.pop();
  }

  var fns = [], sealed = false, current = "";
  var rcs = {
    define: function (i, fn) { if (sealed) throw new Error("patch functions are sealed"); fns[i] = fn; },
    seal: function () { sealed = true; return true; },
    // One evaluation per patch and object: every place the patch's path resolved to, in order.
    // json: {objects: JSON of {hostObject, virtualObject}, calls: [{i, value, valueExists, path}]}
    //   -> JSON [{v: result}, ...]
    runBatch: function (json) {
      var a = JSON.parse(json), o = JSON.parse(a.objects);
      var host = deepFreeze(o.hostObject), virt = deepFreeze(o.virtualObject), out = [];
      for (var k = 0; k < a.calls.length; k++) {
        var c = a.calls[k];
        current = c.path;
        var context = deepFreeze({ vcluster: VCLUSTER, hostObject: host, virtualObject: virt, path: c.path });
        var r = fns[c.i](c.value, c.valueExists, context);
        checkResult(r, c.path, []);
        out.push({ v: r });
      }
      current = "";
      return JSON.stringify(out);
    },
    // the concrete path being evaluated when an evaluation was stopped
    current: function () { return current; }
  };
  deepFreeze(VCLUSTER);
  // Memory outside V8's heap is not held to the engine's memory limit (set_hard_memory_limit counts the heap only):
  // an expression could keep gigabytes of ArrayBuffer, typed-array or WebAssembly.Memory in globalThis. None of
  // these is JSON data, so no patch needs them.
  ["ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "WebAssembly", "Int8Array", "Uint8Array",
   "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array",
   "Float64Array", "BigInt64Array", "BigUint64Array"].forEach(function (name) { delete global[name]; });
  Object.defineProperty(global, "btoa", { value: btoa });
  Object.defineProperty(global, "atob", { value: atob });
  Object.defineProperty(global, "virtualToHostDNS", { value: virtualToHostDNS });
  Object.defineProperty(global, "__rcs", { value: Object.freeze(rcs) });
})(this);
