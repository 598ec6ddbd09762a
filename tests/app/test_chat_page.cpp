// Drives the chat page offscreen over a real SQLite file: the conversation list model against
// QAbstractItemModelTester and the store's own records, search through FTS, and (with
// $TANDEM_DEFAULT_MODEL) a message whose streamed tokens must land in the view and the database.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "chat_page.h"
#include "main_window.h"
#include "tandem/store/chat_store.h"

using tandem::store::ChatStore;
using tandem::ui::ChatPage;
using tandem::ui::ConversationListModel;

class TestChatPage : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir dir_;
    static tandem::store::NewConversation titled(const std::string& title) {
        tandem::store::NewConversation c;
        c.title = title;
        return c;
    }
    std::shared_ptr<ChatStore> openStore(const QString& name) {
        return ChatStore::open(dir_.filePath(name).toStdString());
    }

  private slots:
    void conversationListFollowsStoreAndSearch() {
        auto store = openStore("list.db");
        const int64_t a = store->create_conversation(titled("Rust lifetimes"));
        store->append_user_message(a, "explain borrow checker please");
        const int64_t b = store->create_conversation(titled("Pasta recipe"));
        store->append_user_message(b, "how long to boil spaghetti");
        const int64_t c = store->create_conversation(titled("Old"));
        store->append_user_message(c, "spaghetti again");
        store->set_archived(c, true);

        tandem::store::AsyncChatStore async(store);
        ConversationListModel model(async);
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy refreshed(&model, &ConversationListModel::refreshed);
        model.refresh();
        QVERIFY(refreshed.wait(5000));
        // Same rows, same order as the store lists them (most recent first, archived hidden).
        const auto listed = store->list_conversations(false);
        QCOMPARE(model.rowCount(), int(listed.size()));
        QCOMPARE(model.rowCount(), 2);
        for (int i = 0; i < model.rowCount(); ++i) {
            QCOMPARE(model.idAt(i), qint64(listed[size_t(i)].id));
            QCOMPARE(model.data(model.index(i), Qt::DisplayRole).toString(),
                     QString::fromStdString(listed[size_t(i)].title));
        }
        QCOMPARE(model.rowOf(c), -1);

        model.setSearchText("spaghetti");
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(model.rowCount(), 1);  // the archived match stays hidden
        QCOMPARE(model.idAt(0), qint64(b));
        QVERIFY(model.data(model.index(0), ConversationListModel::SnippetRole)
                    .toString()
                    .contains("spaghetti"));

        model.setShowArchived(true);
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(model.rowCount(), 2);

        model.setSearchText("nosuchwordanywhere");
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(model.rowCount(), 0);

        model.setSearchText("");
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(model.rowCount(), 3);
    }

    void badModelShowsBannerAndKeepsWorking() {
        ChatPage page(openStore("bad.db"));
        QFile junk(dir_.filePath("junk.gguf"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("this is not a gguf file at all");
        junk.close();
        QSignalSpy failed(&page, &ChatPage::modelFailed);
        page.loadModel(junk.fileName());
        QVERIFY(failed.wait(10000));
        QVERIFY(failed.first().first().toString().contains("junk.gguf"));
        QVERIFY(!page.errorBanner()->isHidden());
        QVERIFY(!page.sendButton()->isEnabled());
    }

    void sendStreamsIntoViewAndDatabase() {
        const QByteArray path = qgetenv("TANDEM_DEFAULT_MODEL");
        if (path.isEmpty() || !QFile::exists(QString::fromLocal8Bit(path)))
            QSKIP("TANDEM_DEFAULT_MODEL is not set (packaging/fetch-default-model.sh): skipped");
        auto store = openStore("chat.db");
        tandem::ui::MainWindow window(store);
        window.show();
        ChatPage* page = window.chatPage();
        page->setMaxTokens(12);
        QSignalSpy ready(page, &ChatPage::modelReady);
        page->loadModel(QString::fromLocal8Bit(path), 2);
        QVERIFY(ready.wait(120000));

        QSignalSpy tokens(page, &ChatPage::tokenShown);
        QSignalSpy finished(page, &ChatPage::generationFinished);
        page->input()->setPlainText("Write the word hello.");
        QTest::mouseClick(page->sendButton(), Qt::LeftButton);
        QVERIFY(page->stopButton()->isEnabled());
        QVERIFY(finished.wait(120000));
        QVERIFY(tokens.count() > 0);
        QString streamed;
        for (const auto& args : tokens) streamed += args.first().toString();

        const qint64 conv = page->currentConversation();
        QVERIFY(conv > 0);
        const auto path2 = store->active_path(conv);
        QCOMPARE(int(path2.size()), 2);
        QCOMPARE(QString::fromStdString(path2[0].content), QString("Write the word hello."));
        QCOMPARE(QString::fromStdString(path2[1].content), streamed);
        QCOMPARE(path2[1].status, tandem::store::MessageStatus::Complete);
        QCOMPARE(path2[1].id, finished.first().first().toLongLong());
        const auto& shown = page->messageView()->messages();
        QCOMPARE(int(shown.size()), 2);
        QCOMPARE(shown[1].text, streamed);
        QVERIFY(page->messageView()->toPlainText().contains(streamed.trimmed().left(20)));
        QVERIFY(page->input()->toPlainText().isEmpty());

        // Stop: a long reply is cut after its first token and saved as interrupted.
        page->setMaxTokens(400);
        tokens.clear();
        finished.clear();
        connect(page, &ChatPage::tokenShown, page, &ChatPage::stop, Qt::SingleShotConnection);
        page->send("Count from one to one hundred in words.");
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.first().at(1).toString(), QString("interrupted"));
        const auto path3 = store->active_path(conv);
        QCOMPARE(int(path3.size()), 4);
        QCOMPARE(path3[3].status, tandem::store::MessageStatus::Interrupted);
        QVERIFY(tokens.count() < 400);
        QString cut;
        for (const auto& args : tokens) cut += args.first().toString();
        QCOMPARE(QString::fromStdString(path3[3].content), cut);
    }
};

QTEST_MAIN(TestChatPage)
#include "test_chat_page.moc"
