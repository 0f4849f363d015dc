// Throwaway: fill P partitions with about MB megabytes each via franz-go.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	addr := os.Args[1]
	parts, _ := strconv.Atoi(os.Args[2])
	mb, _ := strconv.Atoi(os.Args[3])
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("fill"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxBufferedRecords(100000))
	if err != nil {
		panic(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(parts), 1, nil, "fill"); err != nil {
		panic(err)
	}
	val := make([]byte, 1000)
	for i := range val {
		val[i] = byte(i * 7)
	}
	n := parts * mb * 1000
	start := time.Now()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				fmt.Println("produce:", err)
				os.Exit(1)
			}
		})
	}
	cl.Flush(ctx)
	fmt.Println("produced", n, "in", time.Since(start))
}
