// Package rabbittest is what the tests of several packages need to run
// against a real RabbitMQ: the broker's address, a test's own connection
// for topology and consuming, and rabbitmqctl to find and close a
// connection from the server side.
//
// The broker is ANKUSA_AMQP_URL, default the local one on 127.0.0.1:5672
// (scripts/ensure-rabbitmq.sh starts it for make test). A Broker declares
// its exchanges and queues under a prefix of its own and deletes them when
// the test ends; queues also expire on their own (x-expires) if a test
// dies first.
//
// A test that cannot reach the broker, or finds no rabbitmqctl, is
// skipped, or fails when CI=true: CI must not pass by skipping what it was
// meant to run (see Need).
//
// Only tests import this package. It imports nothing of this module, and
// must never import a package of the product: the packages it tests
// import it.
package rabbittest
