module github.com/scrapycluster/scrapy-cluster-go/crawler

go 1.26.8
