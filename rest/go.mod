module github.com/scrapycluster/scrapy-cluster-go/rest

go 1.26.8
