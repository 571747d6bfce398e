package uiproxy

// HistoryViewOf is historyView for the external tests.
var HistoryViewOf = historyView
