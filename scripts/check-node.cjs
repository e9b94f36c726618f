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

/** `[major, minor, patch]` of `22.13.1`, `v20.20.2` or `22` (missing parts 0). */
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

// engines.node: `||` alternatives, each `^X.Y.Z` (that major, at least X.Y.Z) or `>=X.Y.Z`, as src/shared/node-version.ts reads it.
var range = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).engines.node;
var alternatives = String(range).split('||');
var have = parts(process.versions.node);
var supported = false;
var floors = [];
for (var i = 0; i < alternatives.length; i += 1) {
  var found = /^\s*(\^|>=)\s*(\d+(?:\.\d+){0,2})\s*$/.exec(alternatives[i]);
  if (!found) {
    process.stderr.write(
      'scripts/check-node.cjs: package.json engines.node must be "^X.Y.Z" or ">=X.Y.Z" alternatives joined by "||"; found ' + JSON.stringify(range) + '\n',
    );
    process.exit(1);
  }
  var floor = parts(found[2]);
  if (atLeast(have, floor) && (found[1] === '>=' || have[0] === floor[0])) supported = true;
  floors.push(found[2].replace(/(\.0)+$/, '') + '+');
}
if (!supported) {
  var needed = floors.length === 1 ? floors[0] : floors.slice(0, -1).join(', ') + ' or ' + floors[floors.length - 1];
  process.stderr.write(
    'forkpool needs Node.js ' +
      needed +
      ' (package.json engines "' +
      range +
      '"); this is Node.js v' +
      process.versions.node +
      ' (' +
      process.execPath +
      '). Install a current Node (22, 24 or 26 LTS), put it first on PATH, and run it again.\n',
  );
  process.exit(1);
}
