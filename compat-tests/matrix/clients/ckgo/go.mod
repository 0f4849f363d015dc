// One scenario of sluice's compatibility matrix with confluent-kafka-go (compat-tests/matrix). A
// module of its own, so the broker's module does not link librdkafka; the matrix builds it with
// cgo into the cache (clients.go).
module sluice-compat-ckgo

go 1.24

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1
