module github.com/scrapycluster/scrapy-cluster-go/kafka-monitor

go 1.26.8
