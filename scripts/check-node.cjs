/*
 * `npm ci`, `npm test` and `npm run demo` run this first (preinstall, pretest, predemo): on a
 * Node.js older than package.json `engines` it prints one line naming the Node forkpool needs
 * and exits 1, before a build, a test runner or a dependency can fail in its own words.
 * Written for any Node that may run it: CommonJS, `var`, no syntax newer than ES5, no
 * dependency. src/shared/node-version.ts says the same for the library and the CLI.
 */
'use strict';
var fs = require('fs');
var path = require('path');

var root = path.resolve(__dirname, '..');

// A project that installs forkpool as a dependency: its import checks the Node (require-node.ts); nothing to say here.
if (process.env.npm_lifecycle_event === 'preinstall' && process.env.INIT_CWD && path.resolve(process.env.INIT_CWD) !== root) process.exit(0);

/** `[major, minor, patch]` of `22.13.1` or `v20.20.2`. */
function parts(version) {
  var found = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(String(version));
  if (!found) return [NaN, NaN, NaN];
  return [Number(found[1]), Number(found[2] || 0), Number(found[3] || 0)];
}

function atLeast(have, need) {
  for (var i = 0; i < 3; i += 1) {
    if (have[i] !== need[i]) return have[i] > need[i];
  }
  return true;
}

var range = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).engines.node;
var minimum = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(range);
if (!minimum) {
  process.stderr.write('scripts/check-node.cjs: package.json engines.node must read ">=X.Y.Z"; found ' + JSON.stringify(range) + '\n');
  process.exit(1);
}
if (!atLeast(parts(process.versions.node), parts(minimum[1]))) {
  process.stderr.write(
    'forkpool needs Node.js ' +
      minimum[1] +
      ' or newer (package.json engines "' +
      range +
      '"); this is Node.js v' +
      process.versions.node +
      ' (' +
      process.execPath +
      '). Install a current Node (22, 24 or 26 LTS), put it first on PATH, and run it again.\n',
  );
  process.exit(1);
}
