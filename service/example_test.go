package service_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/service"
)

func ExamplePool() {
	pool, err := service.NewPool("a", service.PoolConfig{Size: 1, Queue: 0})
	if err != nil {
		panic(err)
	}
	first, _ := pool.Acquire(context.Background())
	defer first.Release() // idempotent: harmless after the explicit Release below

	_, err = pool.Acquire(context.Background())
	fmt.Println("second caller rejected as full:", errors.Is(err, service.ErrFull))

	first.Release()
	second, err := pool.Acquire(context.Background())
	fmt.Println("after release:", err, pool.Snapshot().InUse)
	second.Release()
	// Output:
	// second caller rejected as full: true
	// after release: <nil> 1
}
