module github.com/scrapycluster/scrapy-cluster-go/redis-monitor

go 1.26.8
