// Drives the chat page offscreen over a real SQLite file: the conversation list model against
// QAbstractItemModelTester and the store's own records, search through FTS, archive, the message
// view's Markdown (monospace code, copy, actions), branch switching against the store, chat
// settings, and (with $TANDEM_DEFAULT_MODEL) messages whose streamed tokens must land in the view
// and the database, stop, regenerate and edit.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QtTest>

#include "app_test_env.h"
#include "chat_page.h"
#include "chat_settings_dialog.h"
#include "fit_check.h"
#include "main_window.h"
#include "sampling_presets.h"
#include "tandem/store/chat_store.h"

using tandem::store::ChatStore;
using tandem::ui::ChatPage;
using tandem::ui::ConversationListModel;
using tandem::ui::MessageView;

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
    // An assistant reply written as the generator writes one.
    static int64_t reply(ChatStore& s, int64_t conv, const std::string& text,
                         std::optional<int64_t> parent = std::nullopt) {
        auto stream = s.begin_assistant_message(conv, "m", parent);
        stream.append(text);
        stream.finish();
        return stream.id();
    }

  private slots:
    void initTestCase() { tandem::test::isolateSettings(dir_.filePath("settings")); }

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

    void archiveFromThePage() {
        auto store = openStore("archive.db");
        const int64_t a = store->create_conversation(titled("Keep"));
        const int64_t b = store->create_conversation(titled("Put away"));
        ChatPage page(store);
        QAbstractItemModelTester tester(page.conversations(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy refreshed(page.conversations(), &ConversationListModel::refreshed);
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(page.conversations()->rowCount(), 2);
        page.setArchived(b, true);
        QTRY_COMPARE_WITH_TIMEOUT(page.conversations()->rowCount(), 1, 5000);
        QCOMPARE(page.conversations()->idAt(0), qint64(a));
        QVERIFY(store->conversation(b).archived);  // written to the database, not just hidden
        page.showArchivedBox()->setChecked(true);
        QTRY_COMPARE_WITH_TIMEOUT(page.conversations()->rowCount(), 2, 5000);
        page.setArchived(b, false);
        QTRY_VERIFY_WITH_TIMEOUT(!store->conversation(b).archived, 5000);
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

    void modelTooBigIsRefusedAndTheConversationStays() {
        const QString model = tandem::test::defaultModel();
        if (model.isEmpty())
            QSKIP("TANDEM_DEFAULT_MODEL is not set (packaging/fetch-default-model.sh): skipped");
        auto store = openStore("toobig.db");
        const int64_t conv = store->create_conversation(titled("Earlier chat"));
        store->append_user_message(conv, "hello there");
        reply(*store, conv, "General Kenobi");
        ChatPage page(store);
        QSignalSpy reloaded(&page, &ChatPage::conversationReloaded);
        page.openConversation(conv);
        QVERIFY(reloaded.wait(5000));
        tandem::ui::RuntimeChoice small;
        small.memoryLimit = 16u << 20;  // the planner needs far more than 16 MiB for it
        page.setRuntime(small);
        QSignalSpy failed(&page, &ChatPage::modelFailed);
        page.loadModel(model);
        QVERIFY(failed.wait(60000));
        QVERIFY2(page.errorBanner()->text().startsWith("Model too big"),
                 qPrintable(page.errorBanner()->text()));
        QVERIFY(page.errorBanner()->text().contains("does not fit"));
        QVERIFY(!page.sendButton()->isEnabled());
        QCOMPARE(int(page.messageView()->messages().size()), 2);
        QCOMPARE(page.messageView()->messages()[1].text, QString("General Kenobi"));
        // The same verdict straight from the planner, with the real free memory it fits.
        const auto roomy =
            tandem::ui::checkFit(model.toStdString(), 4096, tandem::ui::deviceBudget("cpu", 0));
        QVERIFY2(roomy.fits, qPrintable(roomy.message));
        QVERIFY(roomy.needBytes > (16u << 20));
    }

    void messageViewRendersCodeAndActions() {
        MessageView view;
        const QString code = "int main() {\n    return 0;\n}";
        std::vector<MessageView::Entry> entries(2);
        entries[0] = {"user", "Write C", 11, 0, 1};
        entries[1] = {"assistant", "Here:\n\n```cpp\n" + code + "\n```\n\nDone.", 12, 1, 3};
        view.setMessages(entries);
        QCOMPARE(int(view.codeBlocks().size()), 1);
        QCOMPARE(view.codeBlocks()[0], code);
        const QString plain = view.toPlainText();
        QVERIFY(plain.contains("2/3"));  // the branch switcher of the reply
        QVERIFY(plain.contains("Copy code"));
        QVERIFY(plain.contains("Edit"));
        QVERIFY(plain.contains("Regenerate"));
        // The code is set in a fixed-pitch font, the prose is not.
        bool codeFixed = false, proseFixed = true;
        for (QTextBlock b = view.document()->begin(); b.isValid(); b = b.next()) {
            const QFont f = b.begin().fragment().charFormat().font();
            const bool fixed = QFontInfo(f).fixedPitch() || b.charFormat().fontFixedPitch() ||
                               b.begin().fragment().charFormat().fontFixedPitch();
            if (b.text().contains("return 0;")) codeFixed = fixed;
            if (b.text() == "Done.") proseFixed = fixed;
        }
        QVERIFY(codeFixed);
        QVERIFY(!proseFixed);

        QSignalSpy copied(&view, &MessageView::codeCopied);
        view.activate(QUrl("tandem:copy/0"));
        QCOMPARE(copied.count(), 1);
        QCOMPARE(QApplication::clipboard()->text(), code);
        QSignalSpy edit(&view, &MessageView::editRequested);
        view.activate(QUrl("tandem:edit/11"));
        QCOMPARE(edit.count(), 1);
        QCOMPARE(edit.first().at(0).toLongLong(), 11);
        QCOMPARE(edit.first().at(1).toString(), QString("Write C"));
        QSignalSpy branch(&view, &MessageView::branchRequested);
        view.activate(QUrl("tandem:prev/12"));
        view.activate(QUrl("tandem:next/12"));
        QCOMPARE(branch.count(), 2);
        QCOMPARE(branch.at(0).at(1).toInt(), -1);
        QCOMPARE(branch.at(1).at(1).toInt(), 1);
        // While generating nothing may be edited.
        view.setActionsEnabled(false);
        view.renderNow();
        view.activate(QUrl("tandem:edit/11"));
        QCOMPARE(edit.count(), 1);
        QVERIFY(!view.toPlainText().contains("Regenerate"));
        // Bad links do nothing.
        view.activate(QUrl("tandem:copy/7"));
        view.activate(QUrl("tandem:edit/notanumber"));
        QCOMPARE(copied.count(), 1);
    }

    void branchSwitchFollowsTheStore() {
        auto store = openStore("branches.db");
        const int64_t conv = store->create_conversation(titled("Branches"));
        const int64_t user = store->append_user_message(conv, "Name a colour");
        const int64_t first = reply(*store, conv, "Red");
        const int64_t second = reply(*store, conv, "Blue", user);  // a regeneration
        ChatPage page(store);
        QSignalSpy reloaded(&page, &ChatPage::conversationReloaded);
        page.openConversation(conv);
        QVERIFY(reloaded.wait(5000));
        auto shown = page.messageView()->messages();
        QCOMPARE(int(shown.size()), 2);
        QCOMPARE(shown[1].id, second);
        QCOMPARE(shown[1].text, QString("Blue"));
        QCOMPARE(shown[1].siblingIndex, 1);
        QCOMPARE(shown[1].siblingCount, 2);
        QVERIFY(page.messageView()->toPlainText().contains("2/2"));

        page.messageView()->activate(QUrl(QString("tandem:prev/%1").arg(second)));
        QVERIFY(reloaded.wait(5000));
        shown = page.messageView()->messages();
        QCOMPARE(shown[1].id, first);
        QCOMPARE(shown[1].text, QString("Red"));
        QCOMPARE(store->active_path(conv).back().id, first);  // the choice is saved

        // An edit made elsewhere (another process) shows up as a branch of the user message.
        const int64_t edited = store->edit_message(user, "Name a fruit");
        reply(*store, conv, "Apple");
        page.reloadConversation();
        QVERIFY(reloaded.wait(5000));
        shown = page.messageView()->messages();
        QCOMPARE(shown[0].id, edited);
        QCOMPARE(shown[0].siblingCount, 2);
        QCOMPARE(shown[1].text, QString("Apple"));
        page.switchBranch(edited, -1);
        QVERIFY(reloaded.wait(5000));
        QCOMPARE(page.messageView()->messages()[0].text, QString("Name a colour"));
        QCOMPARE(page.messageView()->messages()[1].text, QString("Red"));
    }

    void chatSettingsAndPresets() {
        // Presets as the dialog shows them; a hand edit makes the preset "custom".
        tandem::ui::ChatSettingsDialog dialog("Be brief.", tandem::ui::samplingPreset("balanced"));
        QCOMPARE(dialog.systemPrompt(), QString("Be brief."));
        QCOMPARE(dialog.sampling().preset, QString("balanced"));
        QCOMPARE(dialog.sampling().params.temperature, 0.7f);
        dialog.presetBox()->setCurrentIndex(dialog.presetBox()->findData("creative"));
        QCOMPARE(dialog.sampling().params.temperature, 1.0f);
        dialog.temperatureBox()->setValue(0.3);
        QCOMPARE(dialog.sampling().preset, QString("custom"));
        QCOMPARE(dialog.sampling().params.temperature, 0.3f);

        // Stored JSON: out-of-range values are clamped, wrong types ignored.
        const auto s = tandem::ui::samplingFromJson(
            {{"temperature", 99}, {"top_p", "high"}, {"max_tokens", 0}, {"top_k", 50}});
        QCOMPARE(s.params.temperature, 5.0f);
        QCOMPARE(s.params.top_p, 1.0f);
        QCOMPARE(s.maxTokens, 1);
        QCOMPARE(s.params.top_k, 50);
        const auto back =
            tandem::ui::samplingFromJson(tandem::ui::samplingToJson(dialog.sampling()));
        QCOMPARE(back.params.temperature, 0.3f);
        QCOMPARE(back.preset, QString("custom"));
    }

    void sendStopRegenerateEditSearch() {
        const QString modelPath = tandem::test::defaultModel();
        if (modelPath.isEmpty())
            QSKIP("TANDEM_DEFAULT_MODEL is not set (packaging/fetch-default-model.sh): skipped");
        auto store = openStore("chat.db");
        tandem::ui::MainWindow window(store, tandem::test::windowOptions(dir_.filePath("home")));
        window.show();
        ChatPage* page = window.chatPage();
        page->setMaxTokens(12);
        tandem::ui::RuntimeChoice rt;
        rt.threads = 2;
        page->setRuntime(rt);
        QSignalSpy ready(page, &ChatPage::modelReady);
        page->loadModel(modelPath);
        QVERIFY(ready.wait(120000));

        QSignalSpy tokens(page, &ChatPage::tokenShown);
        QSignalSpy finished(page, &ChatPage::generationFinished);
        QSignalSpy reloaded(page, &ChatPage::conversationReloaded);
        page->input()->setPlainText("Write the word hello.");
        QTest::mouseClick(page->sendButton(), Qt::LeftButton);
        QVERIFY(page->stopButton()->isEnabled());
        QVERIFY(finished.wait(120000));
        QVERIFY(tokens.count() > 0);
        QString streamed;
        for (const auto& args : tokens) streamed += args.first().toString();

        const qint64 conv = page->currentConversation();
        QVERIFY(conv > 0);
        auto path = store->active_path(conv);
        QCOMPARE(int(path.size()), 2);
        QCOMPARE(QString::fromStdString(path[0].content), QString("Write the word hello."));
        QCOMPARE(QString::fromStdString(path[1].content), streamed);
        QCOMPARE(path[1].status, tandem::store::MessageStatus::Complete);
        QCOMPARE(path[1].id, finished.first().first().toLongLong());
        QVERIFY(reloaded.wait(5000));
        auto shown = page->messageView()->messages();
        QCOMPARE(int(shown.size()), 2);
        QCOMPARE(shown[1].text, streamed);
        QCOMPARE(shown[1].id, path[1].id);
        QVERIFY(page->messageView()->toPlainText().contains(streamed.trimmed().left(20)));
        QVERIFY(page->input()->toPlainText().isEmpty());
        QVERIFY(page->statsLabel()->text().contains("tok/s"));
        QVERIFY(page->statsLabel()->text().contains("cpu"));

        // Regenerate: a second reply to the same user message, kept as a sibling branch.
        const int64_t firstReply = path[1].id;
        finished.clear();
        page->messageView()->activate(QUrl(QString("tandem:regen/%1").arg(firstReply)));
        QVERIFY(page->isGenerating());
        QVERIFY(finished.wait(120000));
        QVERIFY(reloaded.wait(5000));
        path = store->active_path(conv);
        QCOMPARE(int(path.size()), 2);
        QVERIFY(path[1].id != firstReply);
        QCOMPARE(path[1].sibling_count, 2);
        QCOMPARE(int(store->siblings(firstReply).size()), 2);
        QCOMPARE(page->messageView()->messages()[1].siblingCount, 2);
        // ...and back to the first one.
        page->switchBranch(path[1].id, -1);
        QVERIFY(reloaded.wait(5000));
        QCOMPARE(store->active_path(conv)[1].id, firstReply);

        // Edit the user message: a new branch with its own reply; the old one stays.
        const int64_t firstUser = path[0].id;
        finished.clear();
        page->beginEdit(firstUser, "Write the word hello.");
        QCOMPARE(page->editingMessage(), qint64(firstUser));
        page->input()->setPlainText("Write the word goodbye.");
        QTest::mouseClick(page->sendButton(), Qt::LeftButton);
        QVERIFY(finished.wait(120000));
        QVERIFY(reloaded.wait(5000));
        path = store->active_path(conv);
        QCOMPARE(int(path.size()), 2);
        QVERIFY(path[0].id != firstUser);
        QCOMPARE(QString::fromStdString(path[0].content), QString("Write the word goodbye."));
        QCOMPARE(path[0].sibling_count, 2);
        QCOMPARE(QString::fromStdString(store->message(firstUser).content),
                 QString("Write the word hello."));
        QCOMPARE(page->messageView()->messages()[0].text, QString("Write the word goodbye."));

        // Search finds the conversation by the edited text.
        QSignalSpy listed(page->conversations(), &ConversationListModel::refreshed);
        page->searchBox()->setText("goodbye");
        QTRY_VERIFY_WITH_TIMEOUT(page->conversations()->searchText() == "goodbye" &&
                                     page->conversations()->rowCount() == 1,
                                 5000);
        QCOMPARE(page->conversations()->idAt(0), conv);
        page->searchBox()->clear();

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
