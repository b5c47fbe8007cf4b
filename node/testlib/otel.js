'use strict';
// The OpenTelemetry packages the tracing tests use (@opentelemetry/api is emq's optional peer
// dependency): installed once into EMQ_OTEL_DIR (default /tmp/emq-otel), outside the package, so
// the rest of the suite runs as an install without them does. `otelNodePath()` returns the folder
// to put on NODE_PATH of a child process that should find them (emq's own `require` included).

const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

// Pinned together: sdk-trace-base 2.x wants @opentelemetry/api below 1.10.
const PACKAGES = ['@opentelemetry/api@1.9.0', '@opentelemetry/sdk-trace-base@2.12.1', '@opentelemetry/context-async-hooks@2.12.1'];

function otelNodePath() {
  const dir = process.env.EMQ_OTEL_DIR || '/tmp/emq-otel';
  const modules = path.join(dir, 'node_modules');
  const have = PACKAGES.every((p) => {
    const [name, version] = [p.slice(0, p.lastIndexOf('@')), p.slice(p.lastIndexOf('@') + 1)];
    try {
      return JSON.parse(fs.readFileSync(path.join(modules, name, 'package.json'), 'utf8')).version === version;
    } catch {
      return false;
    }
  });
  if (!have) {
    fs.mkdirSync(dir, { recursive: true });
    execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--prefix', dir, ...PACKAGES], {
      stdio: 'inherit',
      timeout: 300_000,
    });
  }
  return modules;
}

module.exports = { otelNodePath, PACKAGES };
