package main

import "context"

func runSarama(ctx context.Context, e *Env) error  { return na("todo") }
func runKafkaGo(ctx context.Context, e *Env) error { return na("todo") }
