// guestprof.mjs runs a Go test binary built for wasip1 (GOOS=wasip1
// GOARCH=wasm go test -c) in Node's V8, so that `node --cpu-prof` attributes
// time to the guest's functions by name (the test binary keeps its name
// section; the plugins' builds strip it). V8's code is not wazero's, but the
// hot guest functions are the same. The ABI's host functions are stubs: log
// drops the line, the f32 ones throw (no default-path call uses them).
//
//	node --cpu-prof --cpu-prof-interval 100 --cpu-prof-dir=/tmp/prof bench/scripts/guestprof.mjs \
//	  /tmp/bundle.test.wasm -test.run '^$' -test.bench 'DefaultPath/vllm/request$' -test.benchtime 20000x
//	python3 bench/scripts/guestprof.py /tmp/prof/*.cpuprofile BenchmarkDefaultPath.func1
//
// Run it from the package's directory (the tests read testdata relative to
// it); the whole file system is preopened as /.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { argv, env, exit } from 'node:process';

const wasi = new WASI({ version: 'preview1', args: ['test', ...argv.slice(3)], env, preopens: { '/': '/' }, returnOnExit: true });
const mod = await WebAssembly.compile(await readFile(argv[2]));
const host = {
  log: () => {},
  f32_format: () => { throw new Error('guestprof: mr_v2.f32_format is not provided'); },
  f32_parse: () => { throw new Error('guestprof: mr_v2.f32_parse is not provided'); },
};
const inst = await WebAssembly.instantiate(mod, { ...wasi.getImportObject(), mr_v2: host });
exit(wasi.start(inst));
