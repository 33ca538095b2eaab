package dump

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// List writes the cluster's topics to out as the original does, a
// "Topics:" heading then "- <name>" a line, sorted by name; with partitions
// each line ends with the partition count: "- demo.incoming (3 partitions)".
// Internal topics (__consumer_offsets) are left out.
func List(ctx context.Context, cfg kafkaclient.Config, out io.Writer, partitions bool) error {
	topics, err := cfg.ListTopics(ctx)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, "Topics:")
	for _, t := range topics {
		if partitions {
			fmt.Fprintf(w, "- %s (%d %s)\n", t.Name, t.Partitions, plural(t.Partitions, "partition"))
		} else {
			fmt.Fprintf(w, "- %s\n", t.Name)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write topic list: %w", err)
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
