// The package's two entries (issue 25): `import` and `require` give the very same objects, every
// CommonJS export a named ES export and nothing more, and one error class per code of the core's
// table (node/codes.js, generated from core/src/error.rs), each with its code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as esm from 'emq';
import emqDefault, { Queue, Worker, EmqError, InvalidOption, errorCodes } from 'emq';

const require = createRequire(import.meta.url);
const cjs = require('emq'); // both through the package's exports map (a self-reference)
const { CLASS_NAMES } = require('../codes.js');

test('import and require give the same exports, the same objects', () => {
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort());
  for (const k of Object.keys(cjs)) assert.equal(esm[k], cjs[k], k);
  assert.equal(emqDefault, cjs);
  assert.equal(Queue, cjs.Queue);
  assert.equal(Worker, cjs.Worker);
  assert.ok(new InvalidOption('x') instanceof EmqError);
  assert.ok(new cjs.InvalidOption('x') instanceof esm.InvalidOption);
});

test('one error class per code of the core, named as codes.js says, with its code', () => {
  assert.deepEqual(errorCodes, Object.keys(CLASS_NAMES));
  for (const [code, name] of Object.entries(CLASS_NAMES)) {
    const cls = cjs[name];
    assert.equal(typeof cls, 'function', name);
    const e = new cls('m', { cause: 'c' });
    assert.ok(e instanceof EmqError);
    assert.equal(e.code, code);
    assert.equal(e.name, name);
    assert.equal(e.message, 'm');
    assert.equal(e.cause, 'c');
  }
  const classes = Object.keys(cjs).filter((k) => cjs[k]?.prototype instanceof EmqError);
  assert.equal(classes.length, errorCodes.length);
});
