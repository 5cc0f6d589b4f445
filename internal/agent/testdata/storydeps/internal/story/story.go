package story
