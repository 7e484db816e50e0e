// check runs one check of a client script (apollo.mjs, relay.mjs): it
// prints "ok NAME", or "FAIL NAME: why" and exits 1, which fails the Go
// test that ran the script.
export function check(name, fn) {
  try {
    fn();
  } catch (err) {
    console.log(`FAIL ${name}: ${err.message}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
