package partition_test

import (
	"fmt"

	"github.com/leaderkit/elector/partition"
)

// Three members share 15 partitions; c runs on a machine three times the
// size of the others' and sets Options.Weight to 3.
func ExampleQuotasWeighted() {
	members := []string{"a", "b", "c"} // sorted, as Assigner.Members reports them
	fmt.Println(partition.QuotasWeighted("orders", 15, members, []int{1, 1, 3}))
	fmt.Println(partition.Quotas("orders", 15, members)) // every weight 1

	// A cold start places exactly the quotas.
	load := make([]int, len(members))
	for _, i := range partition.PlaceWeighted("orders", 15, members, []int{1, 1, 3}, nil) {
		load[i]++
	}
	fmt.Println(load)
	// Output:
	// [3 3 9]
	// [5 5 5]
	// [3 3 9]
}
