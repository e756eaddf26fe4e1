// Package testsvc starts the real servers tests need — Redis, MariaDB and
// ClickHouse — as child processes on loopback, each in its own temporary
// directory, and stops them when the test (or the test binary) ends. The binaries come
// from Debian packages; deploy/scripts/test-services.sh installs them, and
// `make test` runs it first. A missing binary fails the test with that
// instruction: nothing is skipped.
package testsvc
