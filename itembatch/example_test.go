package itembatch_test

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/spool-run/spool/itembatch"
)

// Items come as JSON Lines or as one JSON array; either way they come back
// compact.
func ExampleReadItems() {
	lines := "{\"id\": 1}\n\n{\"id\": 2,  \"tags\": [\"a\", \"b\"]}\n"
	items, err := itembatch.ReadItems(strings.NewReader(lines))
	if err != nil {
		panic(err)
	}
	for _, it := range items {
		fmt.Println(string(it))
	}

	array := `[ "x", "y" ]`
	items, _ = itembatch.ReadItems(strings.NewReader(array))
	fmt.Println(len(items), "items")

	_, err = itembatch.ReadItems(strings.NewReader("1\n2\n{oops\n"))
	fmt.Println(err)
	// Output:
	// {"id":1}
	// {"id":2,"tags":["a","b"]}
	// 2 items
	// items line 3: invalid JSON: invalid character 'o' looking for beginning of object key string
}

// A CSV file's header names the fields; every row becomes an object whose
// values are strings.
func ExampleReadCSVItems() {
	table := "path,width\na.jpg,800\n\"b, c.jpg\",01024\n"
	items, err := itembatch.ReadCSVItems(strings.NewReader(table))
	if err != nil {
		panic(err)
	}
	for _, it := range items {
		fmt.Println(string(it))
	}

	_, err = itembatch.ReadCSVItems(strings.NewReader("path,width\nd.jpg\n"))
	fmt.Println(err)
	// Output:
	// {"path":"a.jpg","width":"800"}
	// {"path":"b, c.jpg","width":"01024"}
	// items line 2: 1 fields, but the header on line 1 names 2
}

// Seven items by three make batches of 3, 3 and 1.
func ExampleSplit() {
	items, _ := itembatch.ReadItems(strings.NewReader("[1,2,3,4,5,6,7]"))
	batches, _, err := itembatch.Split(items, itembatch.Config{MaxItems: 3})
	if err != nil {
		panic(err)
	}
	for _, b := range batches {
		fmt.Printf("%s (%d bytes)\n", b.JSON(), b.Size())
	}
	// Output:
	// [1,2,3] (7 bytes)
	// [4,5,6] (7 bytes)
	// [7] (3 bytes)
}

// A size limit counts the batch's JSON array as the job gets it, so
// ["aa","bb","cc"] is 16 bytes. An item too big for any batch still runs,
// alone, and a warning says so.
func ExampleSplit_maxBytes() {
	items, _ := itembatch.ReadItems(strings.NewReader(`["aa","bb","cc","a long item, too long","dd"]`))
	batches, warnings, _ := itembatch.Split(items, itembatch.Config{MaxBytes: 16})
	for _, b := range batches {
		fmt.Printf("%s\n", b.JSON())
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// ["aa","bb","cc"]
	// ["a long item, too long"]
	// ["dd"]
	// warning: item 3 is 23 bytes, 25 bytes as a batch of its own, over the 16-byte batch limit; it goes in a batch alone
}

// With GroupBy a batch holds one group only; batches come in the order of
// their first item.
func ExampleSplit_groupBy() {
	items, _ := itembatch.ReadItems(strings.NewReader(`
{"region":"eu","id":1}
{"region":"us","id":2}
{"region":"eu","id":3}
{"region":"eu","id":4}
{"id":5}
`))
	batches, _, _ := itembatch.Split(items, itembatch.Config{GroupBy: "region", MaxItemsPerGroup: 2})
	for _, b := range batches {
		fmt.Printf("%s\n", b.JSON())
	}
	// Output:
	// [{"region":"eu","id":1},{"region":"eu","id":3}]
	// [{"region":"us","id":2}]
	// [{"region":"eu","id":4}]
	// [{"id":5}]
}

// A custom batcher reads JSON Lines and writes one JSON array a line. This
// one puts items whose number is even in one batch and the rest in another.
func ExampleFromCommand() {
	items, _ := itembatch.ReadItems(strings.NewReader("1\n2\n3\n4\n5\n"))
	cmd := exec.Command("sh", "-c", `
		awk '$0 % 2 { odd = odd (odd == "" ? "" : ",") $0; next }
		     { even = even (even == "" ? "" : ",") $0 }
		     END { print "[" odd "]"; print "[" even "]" }'`)
	batches, _, err := itembatch.FromCommand(context.Background(), cmd, items)
	if err != nil {
		panic(err)
	}
	for _, b := range batches {
		fmt.Printf("%s\n", b.JSON())
	}
	// Output:
	// [1,3,5]
	// [2,4]
}

// Items too many to hold are read one at a time and cut as they come:
// each batch is handed out as soon as it is full.
func ExampleSplitter() {
	r := itembatch.NewItemReader(strings.NewReader("1\n2\n3\n4\n5\n6\n7\n"))
	sp, err := itembatch.NewSplitter(itembatch.Config{MaxItems: 3})
	if err != nil {
		panic(err)
	}
	for {
		it, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		done, _ := sp.Add(it)
		for _, b := range done {
			fmt.Println(string(b.JSON()))
		}
	}
	for _, b := range sp.Flush() {
		fmt.Println(string(b.JSON()))
	}
	fmt.Println(r.Count(), "items")
	// Output:
	// [1,2,3]
	// [4,5,6]
	// [7]
	// 7 items
}
